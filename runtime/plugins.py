"""Plugin loading from the `tollway` entry-point group.

pluggy's own loader has no error handling: a plugin that fails to import is
reported by name and skipped here (strict mode raises instead).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

from tollway._core.kernel import Kernel, report_plugin_failure

GROUP = "tollway"


class PluginLoadError(RuntimeError):
    pass


def load_entry_point_plugins(
    kernel: Kernel, *, strict: bool = False, only: set[str] | None = None, found: Iterable[EntryPoint] | None = None
) -> list[str]:
    """Register every installed plugin; returns the names loaded. `found`: the group's entry
    points already read (a test process reads them once instead of for every kernel)."""
    loaded = []
    for ep in entry_points(group=GROUP) if found is None else found:
        if only is not None and ep.name not in only:
            continue
        if kernel.pm.has_plugin(ep.name):
            continue
        try:
            plugin = ep.load()
            kernel.pm.register(plugin, name=ep.name)
        except Exception as exc:
            if strict:
                raise PluginLoadError(f"plugin {ep.name!r} failed to load: {exc}") from exc
            report_plugin_failure(kernel, ep.name, exc)
            continue
        loaded.append(ep.name)
    return loaded
