"""Answers of paid calls: the success envelope, a job's 202 acceptance and the Job."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType


class CallMeta(msgspec.Struct):
    """The fields every inline answer's `data` starts with; the tool's output follows."""

    request_id: str
    receipt_id: str
    status: str
    tool: str


class Success(msgspec.Struct):
    """`{success, data}`: `data` is `CallMeta` merged with the tool's output."""

    data: dict[str, Any]
    success: bool = True


class JobAccepted(msgspec.Struct):
    """The 202 answer of a job-mode tool (not wrapped in success/data)."""

    request_id: str
    tool: str
    status: str
    receipt_id: str | None = None
    message: str | None = None
    # a tool's `accepted_fields` add theirs after these (core/wire/slots.py)


class JobStatus(msgspec.Struct):
    """The Job resource: `result` only when completed, the error fields only when failed."""

    request_id: str
    status: Literal["pending", "processing", "completed", "failed"]
    tool: str
    receipt_id: str | None
    created_at: str
    updated_at: str
    result: Any | UnsetType = UNSET
    error: str | UnsetType = UNSET
    error_code: str | UnsetType = UNSET
    error_category: str | UnsetType = UNSET
    error_status: int | UnsetType = UNSET
    # What a running job last said of its progress (e.g. "reading 7/12"); kept when it ends.
    message: str | UnsetType = UNSET
    # a tool's `job_extras` add theirs after these (core/wire/slots.py)
