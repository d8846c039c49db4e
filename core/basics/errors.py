"""The one error taxonomy of the service: every refusal is a `ServiceError`.

Each front turns a `ServiceError` into its protocol's answer (HTTP status and
the `{error, message, details}` body of docs/api.md, or an MCP tool error) and nothing
else; the kernel never builds protocol responses itself.
"""

from __future__ import annotations

from typing import Any

from tollway._core.basics.json_values import JSONValue


class ServiceError(Exception):
    """A refusal: HTTP status, machine code and human message (docs/api.md)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        *,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
        payment_required: dict[str, Any] | None = None,
        settlement: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = dict(headers or {})
        # Fields some refusals carry beside error/message (docs/api.md)
        # (402 quote fields, retry_after, request_id/receipt_id of failed calls).
        self.extra = dict(extra or {})
        # A 402 quote's x402 PaymentRequired object: the HTTP front sends it as the
        # PAYMENT-REQUIRED header (base64 JSON), the MCP front as the tool result.
        self.payment_required = payment_required
        # A settlement that was refused: its x402 SettleResponse (`success: false`,
        # `errorReason`), which x402 v2's HTTP transport sends with the 402 as the
        # PAYMENT-RESPONSE header, as it does a settled payment's with the answer.
        self.settlement = settlement

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        out.update(self.extra)
        if self.details is not None:
            out["details"] = self.details
        return out

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"ServiceError({self.status}, {self.code!r}, {self.message!r})"


def invalid_request(message: str, details: list[dict[str, str]] | None = None) -> ServiceError:
    """400 `invalid_request`: wrong shape, missing field or value outside the declared limits."""
    return ServiceError(400, "invalid_request", message, details or [])


def invalid_input(message: str, details: Any = None, **extra: Any) -> ServiceError:
    """400 `invalid_input`: semantically invalid input."""
    return ServiceError(400, "invalid_input", message, details, extra=extra)


def not_found(message: str = "Not found") -> ServiceError:
    return ServiceError(404, "not_found", message)


def unauthorized(message: str, code: str = "unauthorized") -> ServiceError:
    return ServiceError(401, code, message)


def forbidden(message: str, code: str = "forbidden") -> ServiceError:
    return ServiceError(403, code, message)


def internal_error(message: str = "The call failed; nothing was charged.", **extra: Any) -> ServiceError:
    return ServiceError(500, "internal_error", message, extra=extra)


class Refusal(ServiceError):
    """A plugin's refusal with a code of its own (public as `tollway.Refusal`): raised by a
    tool's `check` (before payment) or its `run` (a failed, uncharged call).

    `Refusal("invalid_input", "depot: not a stop", details=[{"field": "depot", "message": "..."}],
    extra={"code": "unknown_depot"})` answers 400 with that body; `status` sets another.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int = 400,
        details: JSONValue = None,
        extra: dict[str, JSONValue] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, code, message, details, headers=headers, extra=extra)
