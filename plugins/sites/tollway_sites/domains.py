"""The `domains` provider kind: who registered a domain and when its registration lapses."""

from __future__ import annotations

from tollway import Provider

PROVIDERS: tuple[Provider, ...] = ()
