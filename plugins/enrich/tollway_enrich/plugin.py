"""Hook implementations: the enrichment tools and the `pdl` enrichment provider."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Provider, Tool, hookimpl

from .pdl import PDL
from .tools import ENRICH_EMAIL, ENRICH_PROFILE


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(ENRICH_PROFILE)
    register(ENRICH_EMAIL)


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(PDL)
