"""The started service's `Platform` (webhook target rules, outbox, notifications) for the
checks a tool runs before payment, which receive only the input. One service per process."""
from __future__ import annotations

from typing import Any

_current: dict[str, Any] = {}


def set_platform(platform: Any) -> None:
    _current["platform"] = platform


def platform() -> Any:
    return _current.get("platform")
