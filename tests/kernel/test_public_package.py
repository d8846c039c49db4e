"""Plugins (their sources and their tests), the plugin template and the docs' examples import only the public `tollway`
package: a plugin that reaches into `core.*` (or the other internal packages) fails here."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tollway

REPO = Path(__file__).resolve().parents[2]
INTERNAL = ("core", "runtime", "http_server", "mcp_server", "tests")


def plugin_sources() -> list[Path]:
    files = [*REPO.glob("plugins/*/tollway_*/**/*.py"), *REPO.glob("plugins/*/tests/**/*.py")]
    files += [
        p
        for p in (REPO / "plugin_template").rglob("*")
        if p.is_file() and p.suffix in (".py", ".tmpl") or p.name.endswith(".py")
    ]
    files += [*REPO.glob("docs/examples/tollway_*/*.py")]  # the worked plugin of docs/plugins.md
    return sorted(set(files))


_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)


def internal_imports(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a template file with {{placeholders}}: read its import lines
        names = [m.group(1) or m.group(2) for m in _IMPORT.finditer(source)]
        return [n for n in names if _internal(n)]
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            names = _named_modules(node)
        found += [n for n in names if _internal(n)]
    return found


def _internal(name: str) -> bool:
    """A module of ours that is not the public package: `tollway._core...` (installed) or
    `core...` (the repository's folder), likewise the runtime and the fronts, or the tests."""
    return name.split(".")[0] in INTERNAL or name.startswith("tollway._")


def _named_modules(node: ast.AST) -> list[str]:
    """Modules named as strings: `pytest_plugins = [...]` (a conftest loading a pytest
    plugin) and `importlib.import_module("...")` / `__import__("...")`."""
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets):
        values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
        return [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if (
        isinstance(node, ast.Call)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("import_module", "__import__"):
            return [node.args[0].value]
    return []


@pytest.mark.parametrize("path", plugin_sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_plugin_sources_import_only_tollway(path: Path) -> None:
    assert internal_imports(path.read_text()) == [], f"{path.relative_to(REPO)} imports internals; use `tollway`"


def test_the_check_sees_internal_imports() -> None:
    assert internal_imports("from core.tool import Tool\nimport runtime.cli\nfrom tollway import Tool") == [
        "core.tool",
        "runtime.cli",
    ]
    assert internal_imports("from tollway.testing import PluginContract\nimport httpx") == []
    # what a plugin's tests could reach for: the repository's tests package and the fronts
    assert internal_imports(
        "from tests.support.replay import Replay\nimport http_server\nfrom mcp_server import build_server"
    ) == [
        "tests.support.replay",
        "http_server",
        "mcp_server",
    ]
    assert internal_imports('pytest_plugins = ["tests.support.boundary"]') == ["tests.support.boundary"]
    assert internal_imports('import importlib\nimportlib.import_module("runtime.service")\n__import__("core")') == [
        "runtime.service",
        "core",
    ]
    assert internal_imports("from tollway._core.plugin_api.tool import Tool\nimport tollway._runtime.cli") == [
        "tollway._core.plugin_api.tool",
        "tollway._runtime.cli",
    ]
    assert internal_imports('pytest_plugins = ["tollway.testing"]\nimportlib.import_module("tollway_banks.tool")') == []


def test_every_plugins_tests_are_checked() -> None:
    """Plugin tests (and conftests) are in the checked set, for every plugin folder."""
    checked = set(plugin_sources())
    for folder in (REPO / "plugins").iterdir():
        tests = [p for p in (folder / "tests").rglob("*.py")]
        assert tests and set(tests) <= checked, folder.name
    assert REPO / "plugins" / "sanctions" / "tests" / "conftest.py" in checked


def test_docs_python_examples_import_only_tollway() -> None:
    bad = []
    for page in [REPO / "README.md", REPO / "docs" / "plugins.md"]:
        text = page.read_text()
        for block in text.split("```python")[1:]:
            code = block.split("```", 1)[0]
            bad += [
                f"{page.name}: {line.strip()}"
                for line in code.splitlines()
                if line.strip().startswith(("from core", "import core", "from tollway._", "import tollway._"))
            ]
    assert bad == []


def test_public_names_are_exported() -> None:
    for name in tollway.__all__:
        assert getattr(tollway, name) is not None
    for name in (
        "Tool",
        "ToolContext",
        "ToolError",
        "Example",
        "Fact",
        "Setting",
        "PeriodicTask",
        "DataSource",
        "hookimpl",
        "PluginContext",
        "Platform",
        "Refusal",
    ):
        assert name in tollway.__all__


# -- the public surface is documented, and typed ----------------------------------------
def documented_names(heading: str) -> set[str]:
    """The names in the first column of the table under `heading` in docs/plugins.md."""
    page = (REPO / "docs" / "plugins.md").read_text()
    section = page.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in rows for name in re.findall(r"`(\w+)`", cell)}


def test_every_public_name_is_documented_and_every_documented_name_is_public() -> None:
    """`tollway.__all__` is the table "What `tollway` gives a plugin" (datasette's
    `@documented` rule: no undocumented name is public); `tollway.helpers` is its own table."""
    import tollway.helpers

    assert set(tollway.__all__) == documented_names("## What `tollway` gives a plugin")
    assert set(tollway.helpers.__all__) == documented_names("## Helpers: `tollway.helpers`")
    assert not set(tollway.__all__) & set(tollway.helpers.__all__)


def test_the_documented_names_check_reads_the_tables() -> None:
    assert {"PluginContext", "Platform", "StateKey", "Route", "RouteCall"} <= documented_names(
        "## What `tollway` gives a plugin"
    )
    assert "agent_address" in documented_names("## Helpers: `tollway.helpers`")


_ANY = re.compile(r"\bAny\b")


def any_annotations(name: str, obj: object) -> list[str]:
    """Where `Any` appears in a public name's annotations: a function's parameters and
    return; a class's public fields, its public methods' and properties' signatures."""

    def of(where: str, annotations: dict[str, object]) -> list[str]:
        return [
            f"{where}({arg})" for arg, a in annotations.items() if _ANY.search(a if isinstance(a, str) else repr(a))
        ]

    if inspect.isclass(obj):
        if not obj.__module__.startswith(("core", "tollway")):  # Piccolo's AppConfig, MigrationManager
            return []
        found = [
            f"{name}.{f}"
            for f, a in vars(obj).get("__annotations__", {}).items()
            if not f.startswith("_") and _ANY.search(str(a))
        ]
        for attr, member in vars(obj).items():
            fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
            if (
                (not attr.startswith("_") or attr == "__init__")
                and inspect.isfunction(fn)
                and not (attr == "__init__" and dataclasses.is_dataclass(obj))
            ):
                found += of(f"{name}.{attr}", fn.__annotations__)
        return found
    if inspect.isfunction(obj):
        return of(name, obj.__annotations__) if obj.__module__.startswith(("core", "tollway")) else []
    return [name] if "typing.Any" in repr(obj) else []  # an alias (Progress, JSONValue)


def test_no_public_name_is_typed_any() -> None:
    """Nothing a plugin touches is `Any`: a JSON value is `tollway.JSONValue`, a hook's
    argument the `PluginContext`, the kernel services the `Platform` protocol."""
    import tollway.helpers

    found = {
        hit
        for module in (tollway, tollway.helpers)
        for name in module.__all__
        for hit in any_annotations(name, getattr(module, name))
    }
    assert found == set(), "type these (JSONValue for JSON, the PluginContext, a Protocol) instead of Any"


def test_the_any_check_sees_fields_signatures_and_aliases() -> None:
    class Loose:
        value: Any
        typed: int = 0

        def read(self, key: Any) -> int:
            return 0

        @property
        def shown(self) -> dict[str, Any]:
            return {}

    def helper(value: Any) -> None: ...

    Loose.__module__ = helper.__module__ = "core.example"
    assert any_annotations("Loose", Loose) == ["Loose.value", "Loose.read(key)", "Loose.shown(return)"]
    assert any_annotations("helper", helper) == ["helper(value)"]
    assert (
        any_annotations("Loose", type("Loose", (), {"__annotations__": {"value": "Any"}})) == []
    )  # not ours (module builtins)
    assert any_annotations("Alias", Callable[[Any], None]) == ["Alias"]
    assert any_annotations("JSONValue", tollway.JSONValue) == []


def test_the_kernel_platform_is_a_platform() -> None:
    """`tollway.Platform` describes the kernel's: each of its members exists there, methods
    with the same parameters, properties as fields."""
    from tollway._core.platform import KernelPlatform

    members = [n for n in vars(tollway.Platform) if not n.startswith("_")]
    assert {"transaction", "finish_job", "pay_share", "enqueue_webhook", "notify", "provider", "delegated"} <= set(
        members
    )
    fields = {f.name for f in dataclasses.fields(KernelPlatform)}
    for name in members:
        declared = vars(tollway.Platform)[name]
        if isinstance(declared, property):
            assert name in fields, name
            continue
        ours = inspect.signature(getattr(KernelPlatform, name))
        theirs = inspect.signature(declared)
        assert [p for p in ours.parameters if p != "self"] == [p for p in theirs.parameters if p != "self"], name
        assert inspect.iscoroutinefunction(getattr(KernelPlatform, name)) == inspect.iscoroutinefunction(declared), name
