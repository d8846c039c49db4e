"""What the MCP front says in MCP terms where the kernel speaks HTTP: errors that
name headers or routes, and how a tool is paid, retried and waited for.

The kernel's words stay right for the HTTP front; only the MCP front rewords."""

from __future__ import annotations

import re
from typing import Any

from tollway._core.basics.errors import ServiceError

IDENTITY_NEEDED = (
    "This tool needs to know who you are. With `tollway mcp`, set TOLLWAY_AGENT_KEY to an access token "
    "or a wallet private key; over Streamable HTTP, send an access token as `Authorization: Bearer <token>`."
)

# kernel field names that are headers over HTTP and arguments over MCP
_FIELDS = {"Idempotency-Key": "idempotency_key"}
_HEADER_WORDS = re.compile(r"\bIdempotency-Key\b")


def reword(exc: ServiceError) -> ServiceError:
    """`exc` with its message (and detail fields) in MCP terms; the code stays."""
    code = exc.code
    if code == "unauthorized":
        exc.message = IDENTITY_NEEDED
    elif code == "token_cannot_change_watches":
        exc.message = (
            "This access token was issued by the operator and cannot change watches. Sign in with the owner's account: "
            "set TOLLWAY_AGENT_KEY to the wallet's private key, or to an access token from POST /v1/auth/sign-in "
            "(signed with the wallet's write proof)."
        )
    elif code == "idempotency_key_reused":
        exc.message = (
            "This idempotency_key was already used with other arguments. Use a new idempotency_key for a new call "
            "(or leave it out)."
        )
    elif code == "idempotency_in_progress":
        retry = exc.extra.get("retry_after", 1)
        exc.message = (
            f"A call with this idempotency_key is still running. Call again with the same arguments and "
            f"idempotency_key in {retry} s to get its answer (charged once)."
        )
    else:
        exc.message = _HEADER_WORDS.sub("idempotency_key", exc.message)
    if isinstance(exc.details, list):
        exc.details = [_reword_detail(d) for d in exc.details]
    return exc


def _reword_detail(detail: Any) -> Any:
    if isinstance(detail, dict) and detail.get("field") in _FIELDS:
        return {**detail, "field": _FIELDS[detail["field"]]}
    return detail


def job_message(request_id: str, status: str, *, waited_s: int, job: dict[str, Any] | None, refunds: bool) -> str:
    """The `message` of a job tool's answer: what happened and what to do next (a
    finished wait never sends the caller to `job_status`)."""
    if job is not None and status == "completed":
        return f"Job {request_id} completed; its result is in `job.result`."
    if job is not None and status == "failed":
        refunded = " It was refunded to your credits." if refunds else ""
        return f"Job {request_id} failed ({job.get('error_code')}): {job.get('error')}{refunded}"
    if waited_s:
        return f"Job {request_id} is still {status} after {waited_s} s; call `job_status` with this request_id for the result."
    return f"Accepted as job {request_id}. Call `job_status` with this request_id for the result, or pass wait_seconds to wait."
