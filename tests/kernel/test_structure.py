"""The code's shape: the kernel is a composition of services (no mixins), every
`core/` module stays small, and no package of ours imports itself in a circle."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core"
MAX_CORE_LINES = 300


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def test_the_kernel_class_has_no_base_classes() -> None:
    classes = {node.name: node for node in _tree(CORE / "kernel.py").body if isinstance(node, ast.ClassDef)}
    assert "Kernel" in classes
    assert classes["Kernel"].bases == [], "Kernel composes services; it inherits from nothing"


def test_no_core_method_takes_self_typed_as_the_kernel() -> None:
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(_tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
                first = node.args.args[0]
                if first.arg == "self" and first.annotation is not None:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert offenders == []


def test_every_core_module_is_at_most_300_lines() -> None:
    long = {str(p.relative_to(REPO)): n for p in CORE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_CORE_LINES}
    assert long == {}


def _imports_of(path: Path, package: str, modules: set[str]) -> set[str]:
    """The sibling modules `path` imports (at any depth of the file: a function-level
    import is an edge too), as module names of `package`."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:  # from . import a, b
                found.update(a.name for a in node.names if a.name in modules)
            elif node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 0 and node.module and node.module.startswith(package + "."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(package + "."):
                    found.add(alias.name.split(".")[1])
    return found & modules


def _cycles(folder: Path) -> list[list[str]]:
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {m: _imports_of(folder / f"{m}.py", folder.name, modules) - {m} for m in modules}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from .a import y\n")
    assert _cycles(pkg) == [["a", "b", "a"]]


@pytest.mark.parametrize("folder", ["plugins/solve/tollway_solve", "core", "core/payments", "runtime", "mcp_server", "http_server"])
def test_modules_import_each_other_without_cycles(folder: str) -> None:
    assert _cycles(REPO / folder) == []


def _imported_modules(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_runtime_alone_assembles_the_fronts() -> None:
    """The fronts route; workers, scheduler and kernels are built by runtime/service.py."""
    for front in ("http_server", "mcp_server"):
        for path in sorted((REPO / front).glob("*.py")):
            imported = _imported_modules(path)
            assert not {m for m in imported if m == "runtime" or m.startswith("runtime.")}, path.name
            assert "Kernel(" not in path.read_text(), path.name
    testing = _imported_modules(REPO / "tollway" / "testing.py")
    assert not {m for m in testing if m.split(".")[0] in ("http_server", "mcp_server")}


# -- plugins keep no module-level mutable state (issue 26, the plugin context) ------------
# What a plugin keeps per running service goes in `PluginContext.state` (docs/plugins.md,
# "Plugin context"): a module global is shared by every service of the process (the tests
# run many) and outlives each. Constants stay: tuples, frozensets, MappingProxyType,
# UPPER_CASE names never mutated, compiled regexes, loggers, tables, functools caches.
_MUTABLE_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter", "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "bytearray"})
_MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add", "discard", "__setitem__", "__delitem__"})


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _module_bindings(body: list[ast.stmt], out: dict[str, tuple[ast.expr, int]]) -> dict[str, tuple[ast.expr, int]]:
    """Names bound at module level (also under a module-level if/try/with), with their value."""
    for st in body:
        if isinstance(st, ast.Assign):
            out.update({t.id: (st.value, st.lineno) for t in st.targets if isinstance(t, ast.Name)})
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
            out[st.target.id] = (st.value, st.lineno)
        elif isinstance(st, (ast.If, ast.Try, ast.With)):
            for block in (st.body, getattr(st, "orelse", []), *[h.body for h in getattr(st, "handlers", [])]):
                _module_bindings(block, out)
    return out


def _mutated_names(tree: ast.Module) -> set[str]:
    """Names the module mutates: `name.append(...)` and the other mutators, `name[k] = v`,
    `del name[k]`, `name += ...`."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS and isinstance(node.func.value, ast.Name):
            out.add(node.func.value.id)
        elif isinstance(node, (ast.Assign, ast.Delete, ast.AugAssign)):
            targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
            out.update(t.value.id for t in targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name))
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
    return out


def module_state(source: str) -> list[str]:
    """Why a plugin module keeps module-level mutable state: `global` statements, module-level
    names the module mutates, and mutable containers bound to lower-case names."""
    tree = ast.parse(source)
    found = [f"line {n.lineno}: global {', '.join(n.names)}" for n in ast.walk(tree) if isinstance(n, ast.Global)]
    mutated = _mutated_names(tree)
    for name, (value, line) in _module_bindings(tree.body, {}).items():
        if name.startswith("__") and name.endswith("__"):  # __all__
            continue
        container = isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)) or (
            isinstance(value, ast.Call) and _callee(value) in _MUTABLE_CALLS
        )
        if name in mutated:
            found.append(f"line {line}: {name} is mutated module-level state")
        elif container and not name.lstrip("_").isupper():
            found.append(f"line {line}: {name} is a mutable module-level container")
    return found


def plugin_modules() -> list[Path]:
    return sorted(REPO.glob("plugins/*/tollway_*/**/*.py"))


@pytest.mark.parametrize("path", plugin_modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_plugins_keep_no_module_level_mutable_state(path: Path) -> None:
    assert module_state(path.read_text()) == [], f"{path.relative_to(REPO)}: keep per-service state in PluginContext.state"


def test_the_module_state_scan_finds_what_it_should() -> None:
    assert module_state("_runners: dict[int, object] = {}\n") == ["line 1: _runners is a mutable module-level container"]
    assert module_state("_SEEN = []\ndef f(x):\n    _SEEN.append(x)\n") == ["line 1: _SEEN is mutated module-level state"]
    assert module_state("CACHE = {}\ndef f(k, v):\n    CACHE[k] = v\n") == ["line 1: CACHE is mutated module-level state"]
    assert module_state("n = 0\ndef f():\n    global n\n    n += 1\n") == ["line 3: global n", "line 1: n is mutated module-level state"]
    assert module_state("if True:\n    _tasks = set()\n") == ["line 2: _tasks is a mutable module-level container"]
    constants = (
        "import logging, re, types\nlog = logging.getLogger('x')\n_WORD = re.compile('w')\nKINDS = ('a', 'b')\n"
        "NAMES = frozenset({'a'})\nTABLE = types.MappingProxyType({'a': 1})\nHEADERS = {'Accept': 'json'}\n__all__ = ['f']\n"
        "def f():\n    local = []\n    local.append(1)\n    return local\n"
    )
    assert module_state(constants) == []


def test_the_scan_covers_every_plugin() -> None:
    families = {p.relative_to(REPO / "plugins").parts[0] for p in plugin_modules()}
    assert families == {p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").exists()}
