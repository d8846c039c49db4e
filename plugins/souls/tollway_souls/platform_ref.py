"""The started service's `Platform` and the family's settings, for the tool's checks and
hooks, which receive only their input. One service per process."""
from __future__ import annotations

from typing import Any

_current: dict[str, Any] = {}


def set_platform(platform: Any) -> None:
    _current["platform"] = platform


def platform() -> Any:
    found = _current.get("platform")
    if found is None:
        raise RuntimeError("the souls plugin has not started")
    return found


def fee_percent() -> int:
    from .settings import FAMILY, fee_percent as parse

    return parse(dict(platform().settings(FAMILY)))
