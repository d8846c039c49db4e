"""`Services`: what a plugin's hooks, periodic tasks and data sources may use (never the kernel)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx


@dataclasses.dataclass(frozen=True)
class Services:
    """Handed to `startup`/`shutdown` hooks, `PeriodicTask.run` and `DataSource.refresh`.

    `home` is `TOLLWAY_HOME` (a plugin keeps its files in a folder of its own under it);
    `offline` is `TOLLWAY_OFFLINE` (no background downloads); `http` is the service's
    shared HTTP client; `settings(family)` maps a family's setting names to their values.
    """

    home: Path
    offline: bool
    http: httpx.AsyncClient
    settings_of: Callable[[str], Mapping[str, str]]
    # One key per running service: a plugin keeps per-service state (e.g. background
    # tasks to cancel at shutdown) under it.
    instance: int = 0
    # The kernel services a plugin's own resources may use (`core.platform.Platform`:
    # transactions, notifications, the webhook outbox); None before the kernel starts.
    platform: Any = None

    def settings(self, family: str) -> Mapping[str, str]:
        """The family's settings by name (`TOLLWAY_SANCTIONS_LISTS_URL` -> `lists_url`), defaults included."""
        return self.settings_of(family)
