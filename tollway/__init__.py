"""The one package a Tollway plugin imports: the whole plugin surface.

    import tollway

    @tollway.hookimpl
    def register_tools(register):
        register(tollway.Tool(...))

or, for a tool that is one typed async function, `@tollway.tool(path=..., price=...)`
over it builds the `Tool` from its signature and docstring.

Hooks are `register_tools`, `register_settings`, `register_periodic_tasks`,
`register_data_sources`, `register_settlement_backends`, `startup(services)` and
`shutdown(services)`; see docs/plugins.md. `tollway.testing` is the contract suite
and the pytest fixtures a plugin's tests use.
"""
from __future__ import annotations

from core.datasources import DataSource, Progress
from core.decorator import tool
from core.errors import Refusal
from core.hookspecs import hookimpl
from core.ids import iso, now_ms
from core.money import to_micro, usdc
from core.periodic import PeriodicTask
from core.services import Services
from core.settings_spec import Setting
from core.tool import Example, Fact, Tool, ToolContext, ToolError
from core.validation import FieldError, FieldErrors

__all__ = [
    "DataSource",
    "Example",
    "Fact",
    "FieldError",
    "FieldErrors",
    "PeriodicTask",
    "Progress",
    "Refusal",
    "Services",
    "Setting",
    "Tool",
    "ToolContext",
    "ToolError",
    "hookimpl",
    "iso",
    "now_ms",
    "tool",
    "to_micro",
    "usdc",
]
