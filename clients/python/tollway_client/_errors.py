"""Every refusal as an exception carrying the service's machine code (`code`).

The service answers `{"error": <code>, "message", "details"?}`; a failed job carries
`error_code`. The client's own refusals (a spend cap, a wait that ran out) have codes too.
"""

from __future__ import annotations

from typing import Any


class TollwayError(Exception):
    """A refusal: `code` is the contract's machine code (`invalid_request`, `payment_required`, …)."""

    def __init__(
        self, code: str, message: str, *, status: int | None = None, details: Any = None, body: Any = None
    ) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.status = status
        self.details = details
        self.body = body if body is not None else {}

    @property
    def request_id(self) -> str | None:
        return self.body.get("request_id") if isinstance(self.body, dict) else None

    @property
    def receipt_id(self) -> str | None:
        return self.body.get("receipt_id") if isinstance(self.body, dict) else None


class InvalidRequest(TollwayError):
    """400: the input was refused before any quote or payment (`invalid_request`, `invalid_input`)."""


class PaymentRequired(TollwayError):
    """402 the client would not or could not pay: no wallet, or credits only. `quote` is the 402's body."""

    @property
    def quote(self) -> dict[str, Any]:
        return self.body


class PaymentFailed(TollwayError):
    """402 `payment_verification_failed`: the signed payment was refused; nothing was charged."""


class SpendCapExceeded(TollwayError):
    """The quote was above the client's cap (per call or in total): nothing was signed."""


class Unauthorized(TollwayError):
    """401: no identity, or one that may not do this."""


class Forbidden(TollwayError):
    """403."""


class NotFound(TollwayError):
    """404: no such route, or not the caller's."""


class Conflict(TollwayError):
    """409/422 of state: an idempotency key reused or in progress, a top-up being settled, …"""


class RateLimited(TollwayError):
    """429: `retry_after` seconds to wait."""

    @property
    def retry_after(self) -> float | None:
        value = self.body.get("retry_after") if isinstance(self.body, dict) else None
        return float(value) if value is not None else None


class ServiceUnavailable(TollwayError):
    """503: a provider the operator has not configured or that is down (`provider_unavailable`, …)."""


class ToolFailed(TollwayError):
    """The tool ran and failed (5xx and other codes after payment): nothing was charged."""


class JobFailed(TollwayError):
    """A job ended `failed`: `code` is its `error_code`, `job` the Job resource."""

    @property
    def job(self) -> dict[str, Any]:
        return self.body


class WaitTimeout(TollwayError):
    """A job did not finish within the wait's timeout (it may still finish: wait again)."""


class TransportError(TollwayError):
    """The service could not be reached, or answered something that is not the API."""


_BY_CODE: dict[str, type[TollwayError]] = {
    "invalid_request": InvalidRequest,
    "invalid_input": InvalidRequest,
    "payment_required": PaymentRequired,
    "payment_verification_failed": PaymentFailed,
    "idempotency_key_reused": Conflict,
    "idempotency_in_progress": Conflict,
    "top_up_in_progress": Conflict,
    "not_found": NotFound,
}
_BY_STATUS: dict[int, type[TollwayError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    402: PaymentRequired,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Conflict,
    429: RateLimited,
    503: ServiceUnavailable,
}


def error_from_answer(status: int, body: Any) -> TollwayError:
    """The exception for a refusal the service answered with `status` and `body`."""
    if not isinstance(body, dict) or not isinstance(body.get("error"), str):
        return TransportError("unexpected_answer", f"HTTP {status}: {str(body)[:200]}", status=status, body=body)
    code = body["error"]
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or ToolFailed
    if status == 429:
        cls = RateLimited
    return cls(code, str(body.get("message", "")), status=status, details=body.get("details"), body=body)


def error_from_job(job: dict[str, Any]) -> JobFailed:
    return JobFailed(
        str(job.get("error_code") or "job_failed"),
        str(job.get("error") or ""),
        status=job.get("error_status"),
        details={"error_category": job.get("error_category")},
        body=job,
    )
