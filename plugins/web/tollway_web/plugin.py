"""Hook implementations: declare the web tools (read, search, research), their settings,
the search providers and the language-model provider research writes with.

Nothing runs here at import time beyond building the declarations.
"""

from __future__ import annotations

from collections.abc import Callable

from tollway import Provider, Setting, Tool, hookimpl

from .llm_provider import CHAT_COMPLETIONS
from .research.tool import RESEARCH
from .search_providers import PROVIDERS
from .search_tool import WEB_SEARCH
from .settings import SETTINGS
from .tool import WEB_READ


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(WEB_READ)
    register(WEB_SEARCH)
    register(RESEARCH)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    for provider in (*PROVIDERS, CHAT_COMPLETIONS):
        register(provider)
