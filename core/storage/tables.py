"""The kernel's tables (Piccolo). Money columns are integers of micro-USDC and
times are integers of unix milliseconds, so SQLite and PostgreSQL agree exactly.

Tables are declared against a placeholder engine; `runtime.database.Database.bind`
points them at the real one.
"""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.engine.sqlite import SQLiteEngine
from piccolo.table import Table

# Never queried: replaced by Database.bind() before any query runs.
PLACEHOLDER_ENGINE = SQLiteEngine(path="tollway-unbound.sqlite")


class Agent(Table, tablename="tw_agents", db=PLACEHOLDER_ENGINE):
    """Every payer wallet and every registered agent; owns credits, receipts, jobs."""

    id = Varchar(length=36, primary_key=True)
    wallet_address = Varchar(length=42, null=True, default=None, unique=True, index=True)
    name = Text(null=True, default=None)
    credits = BigInt(default=0)  # micro-USDC; a conditional update keeps it >= 0
    created_ms = BigInt()


class LedgerEntry(Table, tablename="tw_ledger", db=PLACEHOLDER_ENGINE):
    """One row per movement of money, written in the same transaction as the balance."""

    id = Varchar(length=40, primary_key=True)
    account = Varchar(length=80, index=True)  # "credits:<agent_id>" or "chain:<chain_id>:<address>"
    delta = BigInt()
    balance_after = BigInt()
    kind = Varchar(length=24)  # grant, top_up, spend, refund, fund, transfer_in, transfer_out
    reference = Varchar(length=120, null=True, default=None, index=True)
    memo = Text(null=True, default=None)
    created_ms = BigInt()


class ChainBalance(Table, tablename="tw_chain_balances", db=PLACEHOLDER_ENGINE):
    """The embedded test network's USDC ledger (local network only)."""

    address = Varchar(length=60, primary_key=True)  # "<chain_id>:<lower-case address>"
    balance = BigInt(default=0)


class Quote(Table, tablename="tw_quotes", db=PLACEHOLDER_ENGINE):
    """A 402 price quote: one tool, one exact input (hash), one amount, one expiry."""

    id = Varchar(length=40, primary_key=True)
    tool = Varchar(length=64)
    input_hash = Varchar(length=64)
    amount = BigInt()
    pay_to = Varchar(length=42)
    network = Varchar(length=32)
    expires_ms = BigInt()
    used_ms = BigInt(null=True, default=None)
    created_ms = BigInt()


class PaymentAuthorization(Table, tablename="tw_payment_authorizations", db=PLACEHOLDER_ENGINE):
    """An EIP-3009 authorization reserved before the tool runs: its key is
    (chain id, asset, from, nonce), so one authorization pays at most once."""

    id = Varchar(length=64, primary_key=True)  # sha256 of chain:asset:from:nonce
    payer = Varchar(length=42, index=True)
    pay_to = Varchar(length=42)
    value = BigInt()
    nonce = Varchar(length=66)
    quote_id = Varchar(length=40, null=True, default=None)
    purpose = Varchar(length=64)  # tool name or "credits_top_up"
    # reserved (verified, nothing sent) -> settling (sent to a remote backend) ->
    # settled | pending (fate unknown: the reconciler asks again) | failed | voided
    status = Varchar(length=16)
    settlement_tx = Varchar(length=66, null=True, default=None)
    payload = Text()  # the payment payload as received (JSON), for settlement retries
    receipt_id = Varchar(length=40, null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()


class Receipt(Table, tablename="tw_receipts", db=PLACEHOLDER_ENGINE):
    """The current signed revision of each receipt, plus private columns never served."""

    receipt_id = Varchar(length=40, primary_key=True)
    agent_id = Varchar(length=36, index=True)
    category = Varchar(length=32)
    tool = Varchar(length=64, null=True, default=None)  # "credits_top_up" for top-ups (not spend)
    amount = BigInt()
    status = Varchar(length=24)
    revision = Integer()
    job_id = Varchar(length=40, null=True, default=None, index=True)
    body = Text()  # the receipt exactly as served (JSON)
    provider_cost = BigInt(null=True, default=None)  # private: never served, never signed
    created_ms = BigInt(index=True)


class ReceiptRevision(Table, tablename="tw_receipt_revisions", db=PLACEHOLDER_ENGINE):
    """Superseded signed revisions, append-only (the current one is in tw_receipts)."""

    id = Varchar(length=48, primary_key=True)  # "<receipt_id>:<revision>"
    receipt_id = Varchar(length=40, index=True)
    revision = Integer()
    body = Text()
    created_ms = BigInt()


class SigningKey(Table, tablename="tw_signing_keys", db=PLACEHOLDER_ENGINE):
    """Public halves of receipt signing keys (the private seed stays in TOLLWAY_HOME)."""

    key_id = Varchar(length=40, primary_key=True)
    public_key = Varchar(length=64)
    active = Boolean(default=True)
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


class ProofNonce(Table, tablename="tw_proof_nonces", db=PLACEHOLDER_ENGINE):
    """Write-proof nonces already used (single use until the proof expires)."""

    id = Varchar(length=110, primary_key=True)  # "<agent>:<nonce>"
    expires_ms = BigInt(index=True)


class CreditTopUp(Table, tablename="tw_credit_top_ups", db=PLACEHOLDER_ENGINE):
    """Credits bought by x402; the settlement transaction is the idempotency key."""

    settlement_tx = Varchar(length=66, primary_key=True)
    transaction_id = Varchar(length=40)  # the ledger row id
    agent_id = Varchar(length=36, index=True)
    amount = BigInt()
    credits_balance = BigInt()
    memo = Text(null=True, default=None)
    created_ms = BigInt()


class Job(Table, tablename="tw_jobs", db=PLACEHOLDER_ENGINE):
    """An accepted asynchronous call. Claimed by a worker under a lease; every
    attempt increments `attempt`, and only the current attempt may write the
    outcome (fencing), so a worker that lost its lease cannot overwrite."""

    id = Varchar(length=40, primary_key=True)  # the request_id
    tool = Varchar(length=64)
    agent_id = Varchar(length=36, index=True)
    status = Varchar(length=16, index=True)  # pending, processing, completed, failed
    input = Text()  # validated input, JSON
    result = Text(null=True, default=None)  # JSON
    error = Text(null=True, default=None)
    error_code = Varchar(length=40, null=True, default=None)
    error_category = Varchar(length=40, null=True, default=None)
    error_status = Integer(null=True, default=None)
    receipt_id = Varchar(length=40, null=True, default=None)
    attempt = Integer(default=0)
    lease_until_ms = BigInt(null=True, default=None)
    worker_id = Varchar(length=80, null=True, default=None)
    created_ms = BigInt(index=True)
    updated_ms = BigInt()
    started_ms = BigInt(null=True, default=None)  # first pick-up (dispatch latency)
    finished_ms = BigInt(null=True, default=None)
    message = Text(null=True, default=None)  # the running job's last progress report
    waiting_for = Varchar(length=16, null=True, default=None)  # 'payment': not claimable until its payment settles


class Notification(Table, tablename="tw_notifications", db=PLACEHOLDER_ENGINE):
    """Stored notifications for an agent (job_completed, job_failed, ...)."""

    id = Varchar(length=36, primary_key=True)
    agent_id = Varchar(length=36, index=True)
    type = Varchar(length=32)
    title = Text()
    body = Text(null=True, default=None)
    metadata = Text()  # JSON
    read = Boolean(default=False)
    created_ms = BigInt(index=True)
    seq = BigInt(default=0)  # monotonic microseconds: newest-first order within one millisecond


class CreditHold(Table, tablename="tw_credit_holds", db=PLACEHOLDER_ENGINE):
    """Credits taken for an inline call that is still running: written in the same
    transaction as the debit, ended (charged or refunded, with a receipt) in the
    same transaction as the outcome. A hold still `held` after the reconciler's
    grace period belongs to a process that died; the reconciler refunds it."""

    id = Varchar(length=40, primary_key=True)  # the request_id
    agent_id = Varchar(length=36, index=True)
    amount = BigInt()
    tool = Varchar(length=64)
    receipt_id = Varchar(length=40)  # the id the receipt will carry, chosen up front
    memo = Text(null=True, default=None)
    decision_context = Text(null=True, default=None)  # JSON
    state = Varchar(length=12, index=True)  # held, charged, refunded
    created_ms = BigInt()
    resolved_ms = BigInt(null=True, default=None)


class TopUpAttempt(Table, tablename="tw_top_up_attempts", db=PLACEHOLDER_ENGINE):
    """A credit top-up whose payment was accepted: what to credit once it settles.

    Keyed by the payment authorization (tw_payment_authorizations.id), so a retry
    of the same payment finds it whatever state the settlement is in."""

    id = Varchar(length=64, primary_key=True)  # the authorization key
    payer = Varchar(length=42, index=True)
    amount = BigInt()
    memo = Text(null=True, default=None)
    status = Varchar(length=12, index=True)  # pending, credited, failed
    settlement_tx = Varchar(length=66, null=True, default=None)
    reason = Text(null=True, default=None)  # why pending or failed
    created_ms = BigInt()
    updated_ms = BigInt()


KERNEL_TABLES: tuple[type[Table], ...] = (
    Agent,
    LedgerEntry,
    ChainBalance,
    Quote,
    PaymentAuthorization,
    Receipt,
    ReceiptRevision,
    SigningKey,
    AccessToken,
    ProofNonce,
    CreditTopUp,
    Job,
    Notification,
    CreditHold,
    TopUpAttempt,
)
