"""The code's shape: the kernel is a composition of services (no mixins); `core/` is a
folder per area with rules between the areas; no package of ours imports itself in a circle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core"
# Installed names of the repository's internal folders (setup.py maps them).
INSTALLED = {
    "core": "tollway._core",
    "runtime": "tollway._runtime",
    "http_server": "tollway._http_server",
    "mcp_server": "tollway._mcp_server",
}
# The kernel's composition root: the modules that assemble the areas into a `Kernel`.
ROOT_MODULES = {"__init__", "kernel", "registry", "builtin", "config", "housekeeping", "platform", "schema"}
# Areas that stand alone: each imports (at module level) only itself and those listed.
STANDS_ON = {"basics": set(), "plugin_api": {"basics"}}
# Areas that never import another one, at any depth of a file.
NEVER = {("credits", "watches")}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    parts[0] = INSTALLED.get(parts[0], parts[0])
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _areas() -> list[str]:
    return sorted(p.name for p in CORE.iterdir() if (p / "__init__.py").exists())


def _area_of(module: str) -> str | None:
    """The area of a `tollway._core...` module, "" for the composition root, None outside core."""
    parts = module.split(".")
    if parts[:2] != ["tollway", "_core"]:
        return None
    return parts[2] if len(parts) > 2 and (CORE / parts[2]).is_dir() else ""


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path, *, module_level: bool) -> set[str]:
    """Absolute names of what `path` imports (`from x import y` counts as `x.y` too, since
    y may be a module); `module_level` leaves out imports inside functions and under
    `if TYPE_CHECKING:`."""
    own = _module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    tree = _tree(path)
    nodes: list[ast.AST] = []
    if module_level:
        stack: list[ast.AST] = list(tree.body)
        while stack:
            node = stack.pop()
            if _is_type_checking(node) or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            nodes.append(node)
            if isinstance(node, (ast.If, ast.Try, ast.With)):
                stack.extend(ast.iter_child_nodes(node))
    else:
        nodes = list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def _known_modules() -> set[str]:
    return {_module_name(p) for p in CORE.rglob("*.py")}


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


def test_every_core_module_lives_in_an_area_folder() -> None:
    """Only the composition root sits at the top of core/; everything else is in the folder
    named for the question it answers."""
    assert {p.stem for p in CORE.glob("*.py")} <= ROOT_MODULES


@pytest.mark.parametrize("area", _areas())
def test_every_area_says_what_it_owns_and_names_its_public_modules(area: str) -> None:
    init = _tree(CORE / area / "__init__.py")
    assert ast.get_docstring(init), f"core/{area}/__init__.py: one line saying what the area owns"
    public = [
        n
        for n in init.body
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PUBLIC_MODULES" for t in n.targets)
    ]
    assert public, f"core/{area}/__init__.py: `PUBLIC_MODULES` names the modules other areas may import"
    names = ast.literal_eval(public[0].value)
    missing = [
        n for n in names if not (CORE / area / f"{n}.py").exists() and not (CORE / area / n / "__init__.py").exists()
    ]
    assert missing == [], f"core/{area}: PUBLIC_MODULES names modules that do not exist"


def _public_modules(area: str) -> set[str]:
    init = _tree(CORE / area / "__init__.py")
    for node in init.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PUBLIC_MODULES" for t in node.targets
        ):
            return {f"tollway._core.{area}.{n}" for n in ast.literal_eval(node.value)}
    return set()


def test_an_area_imports_only_the_public_modules_of_another() -> None:
    known = _known_modules()
    public = {area: _public_modules(area) for area in _areas()}
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        mine = _area_of(_module_name(path))
        if not mine:  # the composition root assembles every area
            continue
        for name in sorted(_imports(path, module_level=False) & known):
            theirs = _area_of(name)
            if (
                theirs
                and theirs != mine
                and name != f"tollway._core.{theirs}"
                and not any(name == p or name.startswith(p + ".") for p in public[theirs])
            ):
                offenders.append(f"{path.relative_to(REPO)} imports {name}, private to core/{theirs}")
    assert offenders == []


@pytest.mark.parametrize("area", sorted(STANDS_ON))
def test_the_ground_areas_stand_alone(area: str) -> None:
    """`basics` imports no other area and `plugin_api` only `basics`, at module level: what a
    plugin declares can be imported without the kernel's machinery."""
    allowed = {area, *STANDS_ON[area]}
    known = _known_modules()
    offenders = []
    for path in sorted((CORE / area).rglob("*.py")):
        for name in sorted(_imports(path, module_level=True) & known):
            if _area_of(name) not in allowed:
                offenders.append(f"{path.relative_to(REPO)} imports {name}")
    assert offenders == []


@pytest.mark.parametrize(("area", "never"), sorted(NEVER))
def test_an_area_never_imports_another(area: str, never: str) -> None:
    """The ledger tells watches that credits changed through an event, not a call."""
    offenders = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in sorted((CORE / area).rglob("*.py"))
        for name in sorted(_imports(path, module_level=False))
        if _area_of(name) == never
    ]
    assert offenders == []


def _cycles(folder: Path) -> list[list[str]]:
    """Import cycles among the modules directly in `folder` (a function-level import is an edge too)."""
    package = _module_name(folder / "__init__.py") if (folder / "__init__.py").exists() else folder.name
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for m in modules:
        names = (
            _imports(folder / f"{m}.py", module_level=False)
            if package.startswith("tollway")
            else _relative_imports(folder / f"{m}.py")
        )
        graph[m] = {n.rpartition(".")[2] for n in names if n.rpartition(".")[0] == package} & modules - {m}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def _relative_imports(path: Path) -> set[str]:
    """For a folder outside the installed packages (a test's tmp folder, a plugin): sibling
    imports as `<folder>.<module>` names."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(f"{path.parent.name}.{node.module.split('.')[0]}")
            else:
                found.update(f"{path.parent.name}.{a.name}" for a in node.names)
    return found


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from .a import y\n")
    assert _cycles(pkg) == [["a", "b", "a"]]


def _folders_checked_for_cycles() -> list[str]:
    folders = ["plugins/solve/tollway_solve", "core", "runtime", "mcp_server", "http_server"]
    return folders + [f"core/{area}" for area in _areas()]


@pytest.mark.parametrize("folder", _folders_checked_for_cycles())
def test_modules_import_each_other_without_cycles(folder: str) -> None:
    assert _cycles(REPO / folder) == []


def test_runtime_alone_assembles_the_fronts() -> None:
    """The fronts route; workers, scheduler and kernels are built by runtime/service.py."""
    for front in ("http_server", "mcp_server"):
        for path in sorted((REPO / front).glob("*.py")):
            imported = _imports(path, module_level=False)
            assert not {m for m in imported if m.startswith("tollway._runtime")}, path.name
            assert "Kernel(" not in path.read_text(), path.name
    testing = _imports(REPO / "tollway" / "testing.py", module_level=False)
    assert not {m for m in testing if m.startswith(("tollway._http_server", "tollway._mcp_server"))}


def test_nothing_imports_an_internal_folder_by_its_folder_name() -> None:
    """`core`, `runtime`, `http_server` and `mcp_server` are importable only under `tollway.`
    once installed; a bare `import core...` works in a checkout and breaks in a wheel."""
    offenders = []
    for path in sorted(REPO.rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel.parts[0] in (".venv", "build", "dist") or ".git" in rel.parts:
            continue
        try:
            names = (
                _imports(path, module_level=False)
                if rel.parts[0] in INSTALLED or rel.parts[0] == "tollway"
                else _plain_imports(path)
            )
        except SyntaxError:
            continue
        offenders += [f"{rel}: {n}" for n in sorted(names) if n.split(".")[0] in INSTALLED]
    assert offenders == []


def _plain_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


# -- plugins keep no module-level mutable state (issue 26, the plugin context) ------------
# What a plugin keeps per running service goes in `PluginContext.state` (docs/plugins.md,
# "Plugin context"): a module global is shared by every service of the process (the tests
# run many) and outlives each. Constants stay: tuples, frozensets, MappingProxyType,
# UPPER_CASE names never mutated, compiled regexes, loggers, tables, functools caches.
_MUTABLE_CALLS = frozenset(
    {
        "dict",
        "list",
        "set",
        "defaultdict",
        "OrderedDict",
        "deque",
        "Counter",
        "WeakKeyDictionary",
        "WeakValueDictionary",
        "WeakSet",
        "bytearray",
    }
)
_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "__setitem__",
        "__delitem__",
    }
)


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
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
            and isinstance(node.func.value, ast.Name)
        ):
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
    assert module_state(path.read_text()) == [], (
        f"{path.relative_to(REPO)}: keep per-service state in PluginContext.state"
    )


def test_the_module_state_scan_finds_what_it_should() -> None:
    assert module_state("_runners: dict[int, object] = {}\n") == [
        "line 1: _runners is a mutable module-level container"
    ]
    assert module_state("_SEEN = []\ndef f(x):\n    _SEEN.append(x)\n") == [
        "line 1: _SEEN is mutated module-level state"
    ]
    assert module_state("CACHE = {}\ndef f(k, v):\n    CACHE[k] = v\n") == [
        "line 1: CACHE is mutated module-level state"
    ]
    assert module_state("n = 0\ndef f():\n    global n\n    n += 1\n") == [
        "line 3: global n",
        "line 1: n is mutated module-level state",
    ]
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


# --- Plugins' SQL: the storage kit (tollway.storage) -------------------------------------------
# Plugins query their tables through Piccolo; a raw statement is a module-level constant with
# bound `{}` placeholders (docs/storage.md). None is assembled by formatting, and their number
# only goes down.

PLUGINS = REPO / "plugins"
_SQL = re.compile(
    r"^\s*(SELECT\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|WITH\s+(RECURSIVE\s+)?\w+(\s*\([^)]*\))?\s+AS\s*\()",
    re.I,
)
# Every plugin's hand-written SQL strings together (230 before the storage kit): it never goes back up.
# 13, plus the commerce buyer's product search index (4: it is no Piccolo table, as the souls index is not).
MAX_PLUGIN_SQL = 17
MAX_GOALS_SQL = 3


def _is_sql(text: object) -> bool:
    return isinstance(text, str) and bool(_SQL.match(text))


def _formatted_sql(tree: ast.AST) -> list[int]:
    """Lines where SQL text is built by formatting: an f-string, `.format(...)` or `%`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and any(
            isinstance(v, ast.Constant) and _is_sql(v.value) for v in node.values[:1]
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            if isinstance(node.func.value, ast.Constant) and _is_sql(node.func.value.value):
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and _is_sql(node.left.value)
        ):
            lines.append(node.lineno)
    return lines


def _sql_strings(tree: ast.AST) -> int:
    """String literals that are SQL statements (an f-string once, by its opening text)."""
    inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    return sum(
        1
        for node in ast.walk(tree)
        if (isinstance(node, ast.Constant) and id(node) not in inner and _is_sql(node.value))
        or (
            isinstance(node, ast.JoinedStr)
            and node.values
            and isinstance(node.values[0], ast.Constant)
            and _is_sql(node.values[0].value)
        )
    )


def _plugin_modules(family: str = "*") -> list[Path]:
    return sorted(p for p in PLUGINS.glob(f"{family}/tollway_*/**/*.py") if "tests" not in p.parts)


def test_the_sql_checks_see_formatting_and_count_statements() -> None:
    source = (
        'a = f"SELECT * FROM t WHERE id = {x}"\n'
        'b = "UPDATE t SET n = {}".format(1)\n'
        'c = "DELETE FROM t WHERE id = %s" % x\n'
        'd = "SELECT * FROM t WHERE id = {}" + lock()\n'
        'e = f"{x} rows"\n'
        'f = "DELETE"\n'
        'g = "update the page"\n'
        'h = "WITH recent AS (SELECT 1) SELECT * FROM recent"\n'
    )
    tree = ast.parse(source)
    assert _formatted_sql(tree) == [1, 2, 3]
    assert _sql_strings(tree) == 5  # a (the f-string), b, c, d, h: not the HTTP method nor the prose


def test_no_plugin_module_builds_sql_by_formatting() -> None:
    found = {str(p.relative_to(REPO)): lines for p in _plugin_modules() if (lines := _formatted_sql(_tree(p)))}
    assert found == {}, "bind values with {} placeholders (tollway.storage), never format them into SQL"


def test_the_plugins_hand_written_sql_stays_within_its_budget() -> None:
    total = sum(_sql_strings(_tree(p)) for p in _plugin_modules())
    goals = sum(_sql_strings(_tree(p)) for p in _plugin_modules("goals"))
    assert goals <= MAX_GOALS_SQL, (
        f"the goals plugin has {goals} SQL strings: use Piccolo table queries (docs/storage.md)"
    )
    assert total <= MAX_PLUGIN_SQL, (
        f"plugins have {total} SQL strings (at most {MAX_PLUGIN_SQL}): use Piccolo table queries (docs/storage.md)"
    )


def test_no_plugin_keeps_its_own_copy_of_the_storage_kit() -> None:
    copies = {str(p.relative_to(REPO)) for p in PLUGINS.glob("*/tollway_*/db.py")}
    assert copies == set(), "use tollway.storage"


def test_the_goals_modules_import_each_other_without_cycles() -> None:
    assert _cycles(PLUGINS / "goals" / "tollway_goals") == []


# --- The kernel's SQL: no statement built by string formatting --------------------------------
# A kernel statement is a fixed, named module-level text with bound `{}` placeholders, or a
# Piccolo table query (docs/storage.md, "Kernel"). In core not even constants are glued into
# SQL: no f-string, `.format`, `%` or `+` on SQL text or on a fragment of it (" AND ", a
# RETURNING list), no `.join` with an SQL separator, and no placeholder list sized per call
# (`", ".join("{}" for _ in values)`). Every area is checked. Released migrations are frozen,
# so not read; the statement helper itself appends `FOR UPDATE` and is checked for the rest.
FORMAT_FREE_AREAS = tuple(_areas())
STATEMENT_HELPER = CORE / "storage" / "sql.py"
_SQL_FRAGMENT = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|AND|OR|IN|SET|VALUES|RETURNING|ORDER BY|GROUP BY|LIMIT|OFFSET|"
    r"UNION|JOIN|FOR UPDATE|ON CONFLICT|AS)\b"
)
# SQL inside a string, not only at its start (the kernel writes its SQL in capitals, prose does not).
_SQL_INSIDE = re.compile(
    r"\bSELECT\s.*\bFROM\s|\bINSERT\s+INTO\s|\bUPDATE\s+\w+\s+SET\s|\bDELETE\s+FROM\s|\bWITH\s+\w+\s+AS\s*\("
)


def _is_sql_text(text: object) -> bool:
    """A whole statement, or a piece of one (its uppercase keywords give it away)."""
    return isinstance(text, str) and (_is_sql(text) or bool(_SQL_FRAGMENT.search(text)))


def _placeholders_per_call(node: ast.AST) -> bool:
    """`", ".join("{}" for _ in values)`: an `IN (...)` sized by its values."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"):
        return False
    parts = node.args[0] if node.args else None
    return (
        isinstance(parts, (ast.GeneratorExp, ast.ListComp))
        and isinstance(parts.elt, ast.Constant)
        and "{}" in str(parts.elt.value)
    )


def _built_sql(tree: ast.AST, *, helper: bool = False) -> list[int]:
    """Lines where SQL text, or a fragment of it, is glued, formatted or sized per call:
    `_formatted_sql`'s cases, an f-string with SQL anywhere in it, `+` with an SQL operand
    (a literal, or a module-level name bound to one), `%`/`.format`/`.join` on a fragment, a
    placeholder list joined per call. `helper`: the statement helper, which may glue the
    fixed ` FOR UPDATE` onto a statement it was given, and nothing else."""

    def sql_text(value: object) -> bool:
        return _is_sql_text(value) and not (helper and str(value).strip() == "FOR UPDATE")

    sql_names = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
        and any(isinstance(c, ast.Constant) and sql_text(c.value) for c in ast.walk(node.value))
    }

    def sqlish(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return sql_text(node.value)
        if isinstance(node, ast.Name):
            return node.id in sql_names
        if isinstance(node, ast.JoinedStr):
            return any(isinstance(v, ast.Constant) and _is_sql_text(v.value) for v in node.values)
        if isinstance(node, ast.BinOp):
            return sqlish(node.left) or sqlish(node.right)
        return False

    def glued(node: ast.AST) -> bool:
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            return sqlish(node) or bool(_SQL_INSIDE.search(text))
        if isinstance(node, ast.BinOp):
            return isinstance(node.op, (ast.Add, ast.Mod)) and sqlish(node)
        return _placeholders_per_call(node) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("format", "join")
            and isinstance(node.func.value, ast.Constant)
            and _is_sql_text(node.func.value.value)
        )

    lines = set(_formatted_sql(tree)) | {node.lineno for node in ast.walk(tree) if glued(node)}
    return sorted(lines)


def _core_modules(area: str) -> list[Path]:
    frozen = ("migrations", "kernel_history")
    return sorted(p for p in (CORE / area).rglob("*.py") if not set(frozen) & set(p.relative_to(CORE).parts))


def test_the_core_sql_check_sees_glued_statements() -> None:
    source = (
        'A = "SELECT * FROM t WHERE "\n'
        'b = A + "id = {}"\n'
        'c = "UPDATE t SET n = {} RETURNING id" + tail()\n'
        'd = f", {expr} AS notified"\n'
        'e = " UNION ALL ".join(parts)\n'
        'f = "x = {}" + " AND y = {}"\n'
        'g = "SELECT * FROM t WHERE id = {} LIMIT 1"\n'
        'h = f"No watch {x} for this agent."\n'
        'i = ", ".join(sorted(names))\n'
        'j = "prefix:" + key\n'
        "def f(x, values):\n"
        '    k = "UPDATE t SET n = {} WHERE " + x\n'
        '    m = f"{x} INSERT INTO t VALUES ({{}})"\n'
        '    n = ", ".join("{}" for _ in values)\n'
        '    o = f"{x} rows selected from the table"\n'
        '    p = "label: " + x\n'
        '    q = sql + " FOR UPDATE"\n'
    )
    assert _built_sql(ast.parse(source)) == [2, 3, 4, 5, 6, 12, 13, 14, 17]
    assert _built_sql(ast.parse(source), helper=True) == [2, 3, 4, 5, 6, 12, 13, 14]


@pytest.mark.parametrize("area", FORMAT_FREE_AREAS)
def test_no_core_module_builds_sql_by_formatting(area: str) -> None:
    assert _core_modules(area), f"core/{area} has no modules"
    found = {
        str(p.relative_to(REPO)): lines
        for p in _core_modules(area)
        if (lines := _built_sql(_tree(p), helper=p == STATEMENT_HELPER))
    }
    assert found == {}, "write each statement whole and name it (sql.Statement), or use a Piccolo table query"


# A kernel statement has a name: written once at module level (a constant, or `sql.statement`),
# never as a literal inside the function that runs it, so docs/storage.md's table of raw
# statements can name every one and a reader finds each statement by its name.
_RUNNERS = {"fetch", "fetch_one", "statement", "Statement", "rows", "row", "execute"}


def _inline_statements(tree: ast.AST) -> list[int]:
    """Lines inside a function where a statement runner is given literal SQL text."""
    lines: set[int] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            text = node.args[0]
            if name in _RUNNERS and isinstance(text, ast.Constant) and _is_sql_text(text.value):
                lines.add(node.lineno)
    return sorted(lines)


def test_the_statement_name_check_sees_inline_sql() -> None:
    source = (
        '_FIND = "SELECT id FROM t WHERE id = {}"\n'
        'LOCKED = sql.statement("SELECT * FROM t WHERE id = {}", for_update=True)\n'
        "async def f(x):\n"
        "    await sql.fetch_one(_FIND, x)\n"
        '    await sql.fetch("UPDATE t SET n = 1 WHERE id = {}", x)\n'
        '    await sql.statement("DELETE FROM t WHERE id = {}").execute(x)\n'
        '    log.info("done", x)\n'
    )
    assert _inline_statements(ast.parse(source)) == [5, 6]


@pytest.mark.parametrize("area", FORMAT_FREE_AREAS)
def test_every_core_statement_is_named(area: str) -> None:
    found = {str(p.relative_to(REPO)): lines for p in _core_modules(area) if (lines := _inline_statements(_tree(p)))}
    assert found == {}, "name the statement at module level (a constant or sql.statement) and run it by name"


def test_the_root_composition_modules_name_their_statements() -> None:
    found = {p.name: lines for p in sorted(CORE.glob("*.py")) if (lines := _inline_statements(_tree(p)))}
    assert found == {}


# -- issue 26: plugin data through declared slots; credits publish, watches subscribe --------

# The signed receipt fields plugins fill (a goal's, a soul's): the only family-named fields
# a kernel wire type may have; anything else of a plugin rides a declared slot of the tool.
SIGNED_PLUGIN_FIELDS = {("ReceiptBody", "goal_id"), ("ReceiptBody", "soul_agent_id")}
EXTRA_FAMILY_WORDS = {"sms", "voice", "letter", "mail", "compute"}


def _family_words() -> set[str]:
    names = {p.name for p in (REPO / "plugins").iterdir() if (p / f"tollway_{p.name}").is_dir()}
    return names | {n.removesuffix("s") for n in names} | EXTRA_FAMILY_WORDS


def _wire_structs() -> dict[str, list[str]]:
    """Every msgspec Struct of core/wire: its name and its own fields (inherited ones are its base's)."""
    import importlib

    import msgspec

    found: dict[str, list[str]] = {}
    for path in sorted((CORE / "wire").glob("*.py")):
        module = importlib.import_module(
            f"tollway._core.wire.{path.stem}" if path.stem != "__init__" else "tollway._core.wire"
        )
        for name, obj in vars(module).items():
            if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__module__ == module.__name__:
                bases = [b for b in obj.__mro__[1:] if issubclass(b, msgspec.Struct) and b is not msgspec.Struct]
                inherited = {f for base in bases for f in base.__struct_fields__}
                found[name] = [f for f in obj.__struct_fields__ if f not in inherited]
    return found


def test_the_family_word_finder_sees_a_plugin_named_field() -> None:
    words = _family_words()
    assert {"goal", "soul", "email", "sms", "postal"} <= words
    assert set(["email", "tracking"]) & words and not set(["receipt", "id"]) & words


def test_kernel_wire_types_have_no_plugin_named_fields_beyond_the_signed_ones() -> None:
    structs, words = _wire_structs(), _family_words()
    assert {"JobAccepted", "JobStatus", "ReceiptBody", "Receipt"} <= set(structs)
    named = {(s, f) for s, fields in structs.items() for f in fields if set(f.split("_")) & words}
    assert named - SIGNED_PLUGIN_FIELDS == set()


def test_the_tool_declaration_and_history_do_not_import_each_other() -> None:
    """History builds tools (Changes, Benchmark) and reads their declarations; the tool
    declaration imports nothing of history."""
    for module in ("tool", "tool_declarations"):
        imported = _imports(CORE / "plugin_api" / f"{module}.py", module_level=False)
        assert {i for i in imported if i.startswith("tollway._core.history")} == set(), module
    declarations = {"tollway._core.plugin_api.tool", "tollway._core.plugin_api.tool_declarations"}
    assert any(_imports(p, module_level=False) & declarations for p in (CORE / "history").glob("*.py"))


def test_the_documented_slot_keys_are_the_contracts_own() -> None:
    """The schemas document these keys of the answers' slots whichever plugins are installed
    (they were documented before the slots existed): a new one is a change of the contract."""
    from tollway._core.wire import calls, slots

    assert {base.__name__: [k for k, _ in keys] for base, keys in slots.DOCUMENTED.items()} == {
        calls.JobAccepted.__name__: ["goal_id"],
        calls.JobStatus.__name__: ["email_tracking"],
    }
