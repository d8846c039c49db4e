"""`Caller`: who a call is from, once a credential has been checked (core/auth/ checks it)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Caller:
    agent_id: str
    wallet: str | None
    via: str  # "token", "proof", "wallet" (a key the front holds) or "id"
    scope: str | None = None  # proof scope
    nonce_id: str | None = None  # a write proof's nonce, until consumed
    valid_until_ms: int = 0  # when the credential (write proof or access token) expires
    token_origin: str | None = None  # an access token's origin: "operator" or "sign_in"

    @property
    def can_spend(self) -> bool:
        """Credits move only for a write proof, an access token or a held wallet key."""
        return self.via in ("token", "wallet") or (self.via == "proof" and self.scope == "write")

    @property
    def proven(self) -> bool:
        """An access token, a valid proof or a held key: only such a caller's reads may change
        state (e.g. mark notifications read) or show private data (`require_proven`). A bare
        X-Agent-ID proves nothing."""
        return self.via in ("token", "proof", "wallet")
