"""ACP's flat error object as an exception, and the codes this package answers with.

Whoever raises `AcpError` (the seller's routes) answers `status` with the body
`{"type", "code", "message", "param"?}`; a client (the buyer side) reads the same body back
into `checkout.Error`.
"""

from __future__ import annotations

from msgspec import UNSET

from .checkout import Error, ErrorType, encode

# RFC §2.1: a missing or unsupported API-Version.
MISSING_API_VERSION = "missing_api_version"
UNSUPPORTED_API_VERSION = "unsupported_api_version"
# RFC §6.4: idempotency.
IDEMPOTENCY_KEY_REQUIRED = "idempotency_key_required"
IDEMPOTENCY_CONFLICT = "idempotency_conflict"
IDEMPOTENCY_IN_FLIGHT = "idempotency_in_flight"
# RFC §4.4: complete while authentication_required, without authentication_result.
REQUIRES_3DS = "requires_3ds"


class AcpError(Exception):
    """An ACP error answer: HTTP `status` and the flat error object."""

    def __init__(
        self,
        status: int,
        type_: ErrorType,
        code: str,
        message: str,
        param: str | None = None,
        *,
        extra: dict[str, object] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = Error(type=type_, code=code, message=message, param=UNSET if param is None else param)
        # Members beside the error object's own (RFC §2.1's `supported_versions`); the
        # schema's Error refuses extra keys, so only the version error carries one.
        self.extra = extra or {}
        self.headers = headers or {}

    def body(self) -> bytes:
        return error_body(self.error, self.extra)


def error_body(error: Error, extra: dict[str, object] | None = None) -> bytes:
    """The JSON bytes of an error object, with any extra members after its own."""
    if not extra:
        return encode(error)
    import msgspec

    return msgspec.json.encode({**msgspec.to_builtins(error), **extra})
