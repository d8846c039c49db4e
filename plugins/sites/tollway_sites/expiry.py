"""The periodic read of each site's domain registration, and its `domain_expiring` notice."""

from __future__ import annotations

from tollway import PeriodicTask

TASKS: tuple[PeriodicTask, ...] = ()
