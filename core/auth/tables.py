"""Who calls: agents (each payer wallet and registered agent), access tokens, the nonces of agent proofs;
and the fingerprints of the settings every process of a deployment must share.

Piccolo tables of this area (money in integer micro-USDC, times in unix milliseconds);
its app is `migrations.APP`."""

from __future__ import annotations

from piccolo.columns import BigInt, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class Agent(Table, tablename="tw_agents", db=PLACEHOLDER_ENGINE):
    """Every payer wallet and every registered agent; owns credits, receipts, jobs."""

    id = Varchar(length=36, primary_key=True)
    wallet_address = Varchar(length=42, null=True, default=None, unique=True)  # its unique index serves reads
    name = Text(null=True, default=None)
    credits = BigInt(default=0)  # micro-USDC; a conditional update keeps it >= 0
    created_ms = BigInt()


class AccessToken(Table, tablename="tw_access_tokens", db=PLACEHOLDER_ENGINE):
    """Bearer tokens for sessions without a wallet key (stored hashed), issued by the
    operator route or to the owner signing in with a write proof."""

    token_hash = Varchar(length=64, primary_key=True)
    agent_id = Varchar(length=36, index=True)
    expires_ms = BigInt()
    created_ms = BigInt()
    # "operator" (issued by the operator route) or "sign_in" (the owner signed in
    # with the wallet's proof): only the latter may change watches.
    origin = Varchar(length=16, default="operator")
    # The token's public name (`at_` and 16 hex): what the operator sees and revokes it by,
    # never the token or its hash. NULL only before its migration filled it in.
    token_id = Varchar(length=24, null=True, default=None)
    revoked_ms = BigInt(null=True, default=None)  # when the operator revoked it (NULL: never)


class ProofNonce(Table, tablename="tw_proof_nonces", db=PLACEHOLDER_ENGINE):
    """Write-proof nonces already used (single use until the proof expires)."""

    id = Varchar(length=110, primary_key=True)  # "<agent>:<nonce>"
    expires_ms = BigInt(index=True)


class SharedSetting(Table, tablename="tw_shared_settings", db=PLACEHOLDER_ENGINE):
    """The last start's fingerprint of each setting every process must share (operator
    token, receipt key, receiving and payout wallets, network): never the secret itself."""

    name = Varchar(length=64, primary_key=True)  # the variable, e.g. TOLLWAY_OPERATOR_TOKEN
    fingerprint = Varchar(length=80)
    host = Varchar(length=255)  # the machine (and process) that recorded it
    recorded_ms = BigInt()


TABLES: tuple[type[Table], ...] = (
    Agent,
    AccessToken,
    ProofNonce,
    SharedSetting,
)
