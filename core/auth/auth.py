"""Who is calling: access tokens, X-Agent-ID with an EIP-712 proof, a wallet whose
key the front holds (`CallRequest.credential`), or a bare X-Agent-ID (free reads
only, never proven, never shown private data). Write-proof nonces are single-use
(database). Each credential is checked once per request (`CallRequest.memo`); a process
remembers a checked access token for at most `TOKEN_RECHECK_S`, so a revocation reaches
every process within that (docs/auth.md)."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import secrets
import time

from tollway._core.auth.agents import NO_AGENT, AgentDirectory, is_address, is_uuid
from tollway._core.auth.auth_proof import ProofError, VerifiedProof, verify_agent_proof
from tollway._core.auth.tables import AccessToken
from tollway._core.basics.caller import Caller
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.ids import now_ms
from tollway._core.basics.request import CallRequest, Credential, HeldWallet, TokenCredential
from tollway._core.storage import sql

log = logging.getLogger("tollway.auth")

TOKEN_CACHE_SIZE = 10_000
# How long a process trusts an access token it checked before asking the database again:
# the bound on a revocation reaching every other process (the revoking one forgets at once).
TOKEN_RECHECK_S = 10


_SPEND_NONCE = "INSERT INTO tw_proof_nonces (id, expires_ms) VALUES ({}, {}) ON CONFLICT (id) DO NOTHING RETURNING id"
_TOKEN_CALLER = (
    "SELECT t.agent_id, t.expires_ms, t.origin, a.wallet_address FROM tw_access_tokens t JOIN "
    "tw_agents a ON a.id = t.agent_id WHERE t.token_hash = {} AND t.revoked_ms IS NULL"
)


def require_proven(caller: Caller | None, req: CallRequest, what: str) -> Caller:
    """`caller` when it proves the agent (an access token, a valid proof, a held key), else
    401 `invalid_agent_proof`: private data (message bodies, attachments, goal records,
    webhook URLs) is never shown to a bare X-Agent-ID, whatever the proof mode. A read proof
    that failed its check in log-only mode is refused with its own reason here."""
    if caller is not None and caller.proven:
        return caller
    failed = req.memo.get("proof")
    if isinstance(failed, ProofError):
        raise ServiceError(401, "invalid_agent_proof", failed.message, {"reason": failed.reason})
    raise ServiceError(
        401,
        "invalid_agent_proof",
        f"{what} is private: send X-Agent-ID with a signed X-Agent-Proof (scope read) or an access token; a bare X-Agent-ID is not enough.",
        {"reason": "missing"},
    )


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token_id() -> str:
    """A token's public id: what the operator sees and revokes it by, unrelated to its value."""
    return "at_" + secrets.token_hex(8)


class Authenticator:
    def __init__(
        self, *, agents: AgentDirectory, chain_id: int, enforce_read_proofs: bool, operator_token: str
    ) -> None:
        self.agents = agents
        self.chain_id = chain_id
        self.enforce_read_proofs = enforce_read_proofs
        self.operator_token = operator_token
        self._tokens: dict[str, tuple[Caller, int]] = {}  # token hash -> (caller, when to check again, ms)

    def is_operator_token(self, given: str) -> bool:
        """Whether `given` is the operator token, compared in constant time (never an empty one)."""
        return bool(given) and hmac.compare_digest(given.encode(), self.operator_token.encode())

    def require_operator(self, req: CallRequest) -> None:
        auth = req.header("authorization") or ""
        given = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        if not self.is_operator_token(given):
            raise ServiceError(
                401, "unauthorized", "Operator routes need Authorization: Bearer <TOLLWAY_OPERATOR_TOKEN>."
            )

    async def issue_access_token(self, agent_id: str, ttl_s: int, *, origin: str = "operator") -> tuple[str, int]:
        """A new token for `agent_id`; `origin` is "operator" (the operator route) or
        "sign_in" (the owner signed in with the wallet's write proof)."""
        if origin not in ("operator", "sign_in"):
            raise ValueError(f"unknown access token origin {origin!r}")
        token = "tw_at_" + secrets.token_urlsafe(32)
        expires = now_ms() + ttl_s * 1000
        await AccessToken.insert(
            AccessToken(
                token_hash=token_hash(token),
                agent_id=agent_id,
                expires_ms=expires,
                created_ms=now_ms(),
                origin=origin,
                token_id=new_token_id(),
            )
        )
        return token, expires

    def forget_token(self, key: str) -> None:
        """Drop a token (by its hash) from this process's memory: revoked, it is refused at once here."""
        self._tokens.pop(key, None)

    async def caller(self, req: CallRequest, *, scope: str, consume_nonce: bool = True) -> Caller | None:
        """Identify the caller for a route needing `scope` ("read" or "write").

        Returns None when the request names nobody. A proof that is present but
        invalid is refused (401), never silently ignored. With
        `consume_nonce=False` a write proof is verified but its single-use nonce
        is left for `consume_nonce` (an idempotent replay executes nothing, so
        it may repeat the proof).
        """
        token_caller = req.memo.get("token")
        if token_caller is not None:  # the request's access token, checked already (`proven_identity`)
            if isinstance(token_caller, ServiceError):
                raise token_caller
            return token_caller  # type: ignore[no-any-return]
        if req.credential is not None:
            return await self._credential_caller(req, req.credential)
        auth = req.header("authorization")
        if auth and auth[:7].lower() == "bearer ":
            return await self._token_for(req, auth[7:].strip())
        agent_header = req.header("x-agent-id")
        if not agent_header:
            return None
        agent_header = agent_header.strip()
        proof = req.header("x-agent-proof")
        if proof:
            try:
                verified = self._checked(req, agent_header, proof, scope)
            except ProofError as exc:
                if scope == "read" and not self.enforce_read_proofs:
                    log.warning("read proof refused (log-only): %s", exc.message)
                    return await self._id_caller(agent_header)
                raise ServiceError(401, "invalid_agent_proof", exc.message, {"reason": exc.reason}) from exc
            return await self._proof_caller(agent_header, verified, consume_nonce=consume_nonce)
        if scope == "read" and self.enforce_read_proofs:
            raise ServiceError(
                401,
                "invalid_agent_proof",
                "This route needs a signed read proof in X-Agent-Proof.",
                {"reason": "missing"},
            )
        if scope == "read" and not self.enforce_read_proofs:
            log.debug("read without proof for %s (log-only)", agent_header)
        return await self._id_caller(agent_header)

    async def wallet_proof(self, req: CallRequest) -> Caller | None:
        """The wallet a write proof in X-Agent-ID/X-Agent-Proof proves, whatever other credential
        the request carries (e.g. a soul key in Authorization): None without X-Agent-Proof,
        401 `invalid_agent_proof` when it fails (never ignored). Its nonce is spent."""
        proof = req.header("x-agent-proof")
        if not proof:
            return None
        agent_header = (req.header("x-agent-id") or "").strip()
        try:
            verified = self._checked(req, agent_header, proof, "write")
        except ProofError as exc:
            raise ServiceError(401, "invalid_agent_proof", exc.message, {"reason": exc.reason}) from exc
        return await self._proof_caller(agent_header, verified, consume_nonce=True)

    def _checked(self, req: CallRequest, agent_header: str, proof: str, scope: str) -> VerifiedProof:
        """The request's proof verified for `scope` (ProofError when it fails)."""
        if not is_address(agent_header):
            raise ServiceError(401, "invalid_agent_proof", "A proof needs X-Agent-ID to be the signing wallet address.")
        verified = self._verified(req, agent_header, proof)
        if scope == "write" and verified.scope != "write":
            raise ProofError("scope_mismatch", "this request needs a proof with scope 'write'")
        return verified

    async def _proof_caller(self, agent_header: str, verified: VerifiedProof, *, consume_nonce: bool) -> Caller:
        """The wallet's agent (created if new) as a proven caller; a write proof carries its nonce."""
        caller = Caller(await self.agents.for_wallet(agent_header), agent_header.lower(), "proof", verified.scope)
        if verified.scope == "write":
            caller = dataclasses.replace(
                caller,
                nonce_id=f"{agent_header.lower()}:{verified.nonce}",
                valid_until_ms=verified.expires_at * 1000 + 30_000,
            )
            if consume_nonce:
                await self.consume_nonce(caller)
        return caller

    async def proven_identity(self, req: CallRequest) -> str | None:
        """What the rate limiter counts a request under when it proves who sends it:
        `wallet:<address>` for a valid agent proof, or an access token's agent
        (`wallet:<its address>`, else `agent:<its id>`). None when nothing is proven
        (no credential, a bare X-Agent-ID, or a credential that fails its check).

        Never raises for a bad credential and never creates an agent: the outcome is
        kept on the request, so the route's own `caller` reuses it (the proof is
        verified once) and refuses it there, after the request was counted.
        """
        if isinstance(req.credential, HeldWallet):
            return f"wallet:{req.credential.address.lower()}"
        token = req.credential.token if isinstance(req.credential, TokenCredential) else None
        auth = req.header("authorization")
        if token is None and auth and auth[:7].lower() == "bearer ":
            token = auth[7:].strip()
        if token is not None:
            try:
                token_caller = await self._token_for(req, token)
            except ServiceError:
                return None
            return f"wallet:{token_caller.wallet}" if token_caller.wallet else f"agent:{token_caller.agent_id}"
        agent_header = (req.header("x-agent-id") or "").strip()
        proof = req.header("x-agent-proof")
        if not proof or not is_address(agent_header):
            return None
        try:
            self._verified(req, agent_header, proof)
        except ProofError:
            return None
        return f"wallet:{agent_header.lower()}"

    async def _credential_caller(self, req: CallRequest, credential: Credential) -> Caller:
        """The caller a front named without headers: an access token, or a wallet whose key it holds."""
        if isinstance(credential, TokenCredential):
            return await self._token_for(req, credential.token)
        address = credential.address.strip()
        if not is_address(address):
            raise ServiceError(401, "invalid_agent_proof", "The wallet is not a 0x address.")
        return Caller(await self.agents.for_wallet(address), address.lower(), "wallet")

    def _verified(self, req: CallRequest, agent_header: str, proof: str) -> VerifiedProof:
        """The request's proof, verified for either scope, once per request (outcome memoised)."""
        done = req.memo.get("proof")
        if done is None:
            try:
                done = verify_agent_proof(
                    proof,
                    agent_id_header=agent_header,
                    chain_id=self.chain_id,
                    method=req.method,
                    path=req.path,
                    body=req.body,
                    now=int(time.time()),
                    required_scope=None,
                )
            except ProofError as exc:
                done = exc
            req.memo["proof"] = done
        if isinstance(done, ProofError):
            raise done
        return done

    async def _token_for(self, req: CallRequest, token: str) -> Caller:
        """The access token's caller, looked up once per request (a refusal too)."""
        done = req.memo.get("token")
        if done is None:
            try:
                done = await self._token_caller(token)
            except ServiceError as exc:
                done = exc
            req.memo["token"] = done
        if isinstance(done, ServiceError):
            raise done
        return done

    async def consume_nonce(self, caller: Caller) -> None:
        """Spend a write proof's nonce; a second use is refused."""
        if caller.nonce_id is None:
            return
        inserted = await sql.fetch_one(
            _SPEND_NONCE,
            caller.nonce_id,
            caller.valid_until_ms,
        )
        if inserted is None:
            raise ServiceError(
                401,
                "invalid_agent_proof",
                "This write proof was already used; sign a new one.",
                {"reason": "nonce_reused"},
            )

    async def _id_caller(self, agent_header: str) -> Caller | None:
        """A bare X-Agent-ID: looked up, never created (an unknown wallet reads as NO_AGENT)."""
        if is_address(agent_header):
            return Caller(await self.agents.find_wallet(agent_header) or NO_AGENT, agent_header.lower(), "id")
        if is_uuid(agent_header):
            row = await self.agents.get(agent_header)
            if row is None:
                raise ServiceError(404, "agent_not_found", f"No agent {agent_header}.")
            return Caller(row["id"], row["wallet_address"], "id")
        raise ServiceError(
            400,
            "invalid_request",
            "X-Agent-ID must be a wallet address or an agent UUID.",
            [{"field": "X-Agent-ID", "message": "expected 0x address or UUID"}],
        )

    async def _token_caller(self, token: str) -> Caller:
        # A token never changes but may be revoked: a process remembers one it checked for
        # TOKEN_RECHECK_S at most (and never past its expiry), which saves a query per call
        # and bounds how long another process's revocation takes to reach this one.
        key = token_hash(token)
        now = now_ms()
        cached = self._tokens.get(key)
        if cached is not None and now < min(cached[0].valid_until_ms, cached[1]):
            return cached[0]
        caller = await self._load_token(key)
        if len(self._tokens) >= TOKEN_CACHE_SIZE:
            self._tokens.clear()
        self._tokens[key] = (caller, now + TOKEN_RECHECK_S * 1000)
        return caller

    async def _load_token(self, key: str) -> Caller:
        row = await sql.fetch_one(
            _TOKEN_CALLER,
            key,
        )
        if row is None or row["expires_ms"] < now_ms():
            raise ServiceError(401, "invalid_access_token", "The access token is unknown, expired or revoked.")
        return Caller(
            row["agent_id"],
            row["wallet_address"],
            "token",
            valid_until_ms=int(row["expires_ms"]),
            token_origin=row["origin"] or "operator",
        )
