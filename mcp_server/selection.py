"""Tool selection for the MCP front: `tollway mcp --tools a,b` and `/mcp?tools=a,b`.

Each item is a tool name (a paid tool, a route tool, `describe_tool`) or a group: a tool
family (`Tool.family`, e.g. `sms`), an installed plugin by its folder name (`telephony`:
every tool and route tool it registers) or `kernel` (the kernel's own tools: balance,
receipts, job_status, the watches, changes, benchmark, ...). `describe_tool` is always in a
selection, and `job_status` too when a selected tool runs as a job.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

log = logging.getLogger("tollway.mcp")

KERNEL_GROUP = "kernel"
BUILTIN_PLUGIN = "tollway.builtin"
PLUGIN_PREFIX = "tollway_"  # entry-point names of the plugins under plugins/
DESCRIBE = "describe_tool"
JOB_STATUS = "job_status"


class UnknownTools(ValueError):
    """A selection naming something that is neither a tool nor a group; the message is one line."""

    def __init__(self, message: str, unknown: list[str]) -> None:
        super().__init__(message)
        self.unknown = unknown


def split(wanted: str | Iterable[str]) -> list[str]:
    """The items of `a,b` (or of several such values), blanks left out."""
    values = [wanted] if isinstance(wanted, str) else list(wanted)
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _declared(impl: Any, hook_args: dict[str, Any]) -> list[Any]:
    """What one plugin's `register_*` hook declares (called on its own, with the arguments it takes)."""
    found: list[Any] = []
    args = {name: hook_args[name] for name in impl.argnames if name in hook_args}
    try:
        impl.function(**{**args, "register": found.append})
    except Exception as exc:  # the kernel's own collect reports a plugin that fails; here it only has no group
        log.debug("plugin %s: %s declared nothing for tool groups: %r", impl.plugin_name, impl.function, exc)
        return []
    return found


def _group_of(plugin_name: str) -> str:
    if plugin_name == BUILTIN_PLUGIN:
        return KERNEL_GROUP
    return plugin_name.removeprefix(PLUGIN_PREFIX)


def tool_groups(kernel: Kernel) -> dict[str, frozenset[str]]:
    """Group name -> the MCP tool names it selects, for a collected kernel."""
    routes = {r.name: r.tool_name for r in kernel.routes.values() if r.mcp_tool is not None}
    groups: dict[str, set[str]] = {}
    for tool in kernel.tools.values():
        groups.setdefault(tool.family, set()).add(tool.name)
    by_plugins: set[str] = set()
    for impl in kernel.pm.hook.register_tools.get_hookimpls():
        names = {
            t.name for t in _declared(impl, {"context": kernel.context}) if getattr(t, "name", None) in kernel.tools
        }
        by_plugins |= names
        groups.setdefault(_group_of(impl.plugin_name), set()).update(names)
    for impl in kernel.pm.hook.register_routes.get_hookimpls():
        names = {routes[r.name] for r in _declared(impl, {}) if getattr(r, "name", None) in routes}
        groups.setdefault(_group_of(impl.plugin_name), set()).update(names)
    # the kernel's own tools (Changes, Benchmark) come from no plugin's hook
    groups.setdefault(KERNEL_GROUP, set()).update(set(kernel.tools) - by_plugins)
    return {name: frozenset(names) for name, names in groups.items() if names}


def resolve(
    kernel: Kernel, wanted: str | Iterable[str], groups: dict[str, frozenset[str]] | None = None
) -> frozenset[str]:
    """The MCP tool names a selection names, or `UnknownTools` (one line, naming the first unknown item)."""
    items = split(wanted)
    if not items:
        raise UnknownTools("the tool selection names no tool or family", [])
    groups = tool_groups(kernel) if groups is None else groups
    tools = {*kernel.tools, *(r.tool_name for r in kernel.routes.values() if r.mcp_tool is not None), DESCRIBE}
    chosen: set[str] = set()
    unknown: list[str] = []
    for item in items:
        if item not in tools and item not in groups:
            unknown.append(item)
            continue
        if item in tools:
            chosen.add(item)
        chosen |= groups.get(item, frozenset())
    if unknown:
        close = difflib.get_close_matches(unknown[0], [*tools, *groups], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UnknownTools(
            f"no tool or family {unknown[0]!r}{hint}; families: {', '.join(sorted(groups))}; "
            "`tollway plugins` lists the tools",
            unknown,
        )
    chosen.add(DESCRIBE)
    if JOB_STATUS in tools and any(kernel.tools[n].mode == "job" for n in chosen if n in kernel.tools):
        chosen.add(JOB_STATUS)  # a job's result outlives the call that started it
    return frozenset(chosen)


class Selections:
    """Resolved selections of one server, by their text (the groups are read once, on first use)."""

    LIMIT = 256  # distinct selection texts remembered

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._groups: dict[str, frozenset[str]] | None = None
        self._resolved: dict[str, frozenset[str]] = {}

    def __call__(self, wanted: str) -> frozenset[str]:
        found = self._resolved.get(wanted)
        if found is None:
            if self._groups is None:
                self._groups = tool_groups(self.kernel)
            found = resolve(self.kernel, wanted, self._groups)
            if len(self._resolved) >= self.LIMIT:
                self._resolved.clear()
            self._resolved[wanted] = found
        return found
