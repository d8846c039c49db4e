"""Plugins (their sources and their tests), the plugin template and the docs' examples import only the public `tollway`
package: a plugin that reaches into `core.*` (or the other internal packages) fails here."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import tollway

REPO = Path(__file__).resolve().parents[2]
INTERNAL = ("core", "runtime", "http_server", "mcp_server", "tests")


def plugin_sources() -> list[Path]:
    files = [*REPO.glob("plugins/*/tollway_*/**/*.py"), *REPO.glob("plugins/*/tests/**/*.py")]
    files += [p for p in (REPO / "plugin_template").rglob("*") if p.is_file() and p.suffix in (".py", ".tmpl") or p.name.endswith(".py")]
    files += [*REPO.glob("docs/examples/tollway_*/*.py")]  # the worked plugin of docs/plugins.md
    return sorted(set(files))


_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)


def internal_imports(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a template file with {{placeholders}}: read its import lines
        names = [m.group(1) or m.group(2) for m in _IMPORT.finditer(source)]
        return [n for n in names if n.split(".")[0] in INTERNAL]
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            names = _named_modules(node)
        found += [n for n in names if n.split(".")[0] in INTERNAL]
    return found


def _named_modules(node: ast.AST) -> list[str]:
    """Modules named as strings: `pytest_plugins = [...]` (a conftest loading a pytest
    plugin) and `importlib.import_module("...")` / `__import__("...")`."""
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets):
        values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
        return [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("import_module", "__import__"):
            return [node.args[0].value]
    return []


@pytest.mark.parametrize("path", plugin_sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_plugin_sources_import_only_tollway(path: Path) -> None:
    assert internal_imports(path.read_text()) == [], f"{path.relative_to(REPO)} imports internals; use `tollway`"


def test_the_check_sees_internal_imports() -> None:
    assert internal_imports("from core.tool import Tool\nimport runtime.cli\nfrom tollway import Tool") == ["core.tool", "runtime.cli"]
    assert internal_imports("from tollway.testing import PluginContract\nimport httpx") == []
    # what a plugin's tests could reach for: the repository's tests package and the fronts
    assert internal_imports("from tests.support.replay import Replay\nimport http_server\nfrom mcp_server import build_server") == [
        "tests.support.replay", "http_server", "mcp_server",
    ]
    assert internal_imports('pytest_plugins = ["tests.support.boundary"]') == ["tests.support.boundary"]
    assert internal_imports('import importlib\nimportlib.import_module("runtime.service")\n__import__("core")') == ["runtime.service", "core"]
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
            bad += [f"{page.name}: {line.strip()}" for line in code.splitlines() if line.strip().startswith(("from core", "import core"))]
    assert bad == []


def test_public_names_are_exported() -> None:
    for name in tollway.__all__:
        assert getattr(tollway, name) is not None
    for name in ("Tool", "ToolContext", "ToolError", "Example", "Fact", "Setting", "PeriodicTask", "DataSource", "hookimpl", "Services", "Refusal"):
        assert name in tollway.__all__
