"""The repository stands alone: nothing in it refers to files a clone does not have.

A fresh clone must pass `make test` with nothing beside it, and its docs must need
nothing outside it (docs/architecture.md, "This repository stands alone"). The audit
hook of tests/support/boundary.py catches what the tests actually open; this module
checks the sources themselves, which also covers what the audit cannot see (the
benches, subprocesses, docs):

* no tracked file names a path outside the repository (a sibling `shared` folder,
  absolute paths of other checkouts, the environment variable that used to point there);
* no tracked file cites documents that are not in the repository (the old design
  notes and product description) instead of a page of docs/;
* no Python file climbs above the repository root from `__file__` or with a `".."`
  path component;
* every recorded fixture and bench instance is named in its folder's README, and all
  of them together stay within the size budget;
* the benches find their data inside the repository.
"""

from __future__ import annotations

import ast
import csv
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()
SKIP_DIRS = {".git", ".venv", "__pycache__", ".tollway", "build", "dist", ".pytest_cache", ".hypothesis"}
DATA_DIRS = sorted([*REPO.glob("plugins/*/tests/fixtures"), REPO / "bench" / "instances"])
BUDGET_BYTES = 20 * 1024 * 1024


def repo_files() -> list[Path]:
    """Tracked files plus new ones not ignored (git), or a walk when there is no .git."""
    if (REPO / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.decode()
        files = [REPO / name for name in out.split("\0") if name]
    else:  # pragma: no cover - an unpacked source archive
        files = [p for p in REPO.rglob("*") if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(REPO).parts)]
    return sorted(p for p in files if p.is_file() and not any(part.endswith(".egg-info") for part in p.parts))


def is_data(path: Path) -> bool:
    """A recorded third-party file (its words are not ours); its folder's README is ours."""
    return path.name != "README.md" and any(d in path.parents for d in DATA_DIRS)


def text_of(path: Path) -> str | None:
    raw = path.read_bytes()
    if b"\0" in raw:
        return None
    return raw.decode("utf-8", errors="replace")


OUTSIDE_PATHS = [
    (re.compile(r"\.\.[/\\]shared\b"), "a sibling `shared` folder"),
    (
        re.compile(r"(?<![\w.-])/work/(?:shared|main|wt)\b"),
        "absolute paths of the machine the project was first built on",
    ),
    (
        re.compile(r"\bTOLLWAY_SHARED_DIR\b|\bTOLLWAY_BENCH_(?:DATA|DIR)\b"),
        "variables that pointed outside the repository",
    ),
    (re.compile(r"\bshared/(?:data|bench|spec)\b"), "data folders that were never part of the repository"),
    (
        re.compile(r"""/\s*["']shared["']|["']shared["']\s*/|join\([^)\n]*["']shared["']"""),
        "a path built to a `shared` folder",
    ),
]
OUTSIDE_DOCUMENTS = [
    (re.compile(r"\bDESIGN(?:\.md\b| §)"), "the design notes (not in the repository)"),
    (re.compile(r"\bSTYLE\.md\b"), "the style notes (not in the repository)"),
    (re.compile(r"\bservice\.md\b"), "the product description (not in the repository)"),
    (
        re.compile(r"\bthe spec\b|\(spec[:;\s]|\bspec \"", re.I),
        '"the spec": state the rule, or point at a page of docs/',
    ),
]


def offences(patterns: list[tuple[re.Pattern[str], str]], *, data_too: bool) -> list[str]:
    found = []
    for path in repo_files():
        if path == THIS or (is_data(path) and not data_too):
            continue
        text = text_of(path)
        if text is None:
            continue
        for pattern, why in patterns:
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path.relative_to(REPO)}:{line}: {m.group(0)!r} ({why})")
    return found


def test_no_file_refers_to_a_path_outside_the_repository():
    assert offences(OUTSIDE_PATHS, data_too=True) == []


def test_no_file_cites_documents_outside_the_repository():
    assert offences(OUTSIDE_DOCUMENTS, data_too=False) == []


def _levels_up(node: ast.AST) -> int | None:
    """How many folders above the file a path expression derived from `__file__` climbs
    (1 is the file's own folder, 0 the file itself); None for any other expression.
    Understands `Path(__file__)[.resolve()|.absolute()]`, `.parent`, `.parents[i]`,
    `os.path.abspath/realpath(...)` and `os.path.dirname(...)`."""
    if isinstance(node, ast.Name) and node.id == "__file__":
        return 0
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "Path" and len(node.args) == 1:
            return _levels_up(node.args[0])
        if isinstance(func, ast.Attribute):
            if func.attr in ("resolve", "absolute") and not node.args:
                return _levels_up(func.value)
            if func.attr in ("abspath", "realpath", "normpath") and len(node.args) == 1:
                return _levels_up(node.args[0])
            if func.attr == "dirname" and len(node.args) == 1:
                inner = _levels_up(node.args[0])
                return None if inner is None else inner + 1
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _levels_up(node.value)
        return None if inner is None else inner + 1
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
        inner = _levels_up(node.value.value)
        index = node.slice
        if inner is None or not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            return None
        return inner + index.value + 1
    return None


def _escapes(tree: ast.AST, depth: int) -> list[tuple[int, str]]:
    """(line, why) for each expression in `tree` that leaves a repository in which the
    file sits `depth` folders below the root (the root is `depth + 1` levels up)."""
    found = []
    for node in ast.walk(tree):
        levels = _levels_up(node)
        if levels is not None and levels > depth + 1:
            found.append((node.lineno, f"climbs {levels} folders from a file {depth} below the root"))
        parts = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path / ".."
            parts = [node.left, node.right]
        elif isinstance(node, ast.Call):  # os.path.join(x, ".."), Path("../x")
            parts = [*node.args, *(k.value for k in node.keywords)]
        if any(_climbs(part) for part in parts):
            found.append((node.lineno, "a '..' path component"))
    return found


def _climbs(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    parts = re.split(r"[/\\]", node.value)
    return ".." in parts


def python_escapes(path: Path) -> list[str]:
    """Places in `path` that climb above the repository root."""
    rel = path.relative_to(REPO)
    # plugin_template/ holds `{{family}}` placeholders: read them as plain names.
    source = re.sub(r"\{\{\s*(\w+)\s*\}\}", r"\1", path.read_text())
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return [f"{rel}:{exc.lineno}: cannot be parsed, so cannot be checked"]
    return [f"{rel}:{line}: {why}" for line, why in _escapes(tree, len(rel.parts) - 1)]


def test_no_python_file_climbs_out_of_the_repository():
    found = []
    for path in repo_files():
        if path.suffix == ".py" and path != THIS and not is_data(path):
            found += python_escapes(path)
    assert found == []


@pytest.mark.parametrize(
    ("source", "escapes"),
    [
        ("Path(__file__).resolve().parents[2]", False),
        ("Path(__file__).resolve().parents[3] / 'x'", True),
        ("Path(__file__).parent.parent.parent", False),
        ("Path(__file__).resolve().parent.parent.parent.parent", True),
        ("os.path.dirname(os.path.dirname(os.path.abspath(__file__)))", False),
        ("os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))", True),
        ("os.path.join(HERE, '..', 'x')", True),
        ("ROOT / '..' / 'x'", True),
        ("Path('../shared/data')", True),
        ("f'{a}..{b}'", False),
    ],
)
def test_the_escape_check_sees_escapes(source, escapes):
    """For a file two folders below the root (tests/support/x.py), where `parents[2]`
    is the root itself."""
    assert bool(_escapes(ast.parse(source), depth=2)) == escapes


@pytest.mark.parametrize("folder", DATA_DIRS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_recorded_file_is_described_in_its_readme(folder):
    readme = folder / "README.md"
    assert readme.is_file(), f"{folder.relative_to(REPO)} has no README.md giving its files' origins"
    text = readme.read_text()
    files = [p for p in folder.rglob("*") if p.is_file() and p != readme and "__pycache__" not in p.parts]
    assert files, f"{folder.relative_to(REPO)} is empty"
    missing = [
        str(p.relative_to(folder)) for p in files if str(p.relative_to(folder)) not in text and p.name not in text
    ]
    assert missing == [], f"not described in {readme.relative_to(REPO)}"


def test_recorded_data_stays_within_the_size_budget():
    total = sum(p.stat().st_size for d in DATA_DIRS for p in d.rglob("*") if p.is_file())
    assert total <= BUDGET_BYTES, f"{total} bytes of fixtures and bench instances (budget {BUDGET_BYTES})"


def _load_bench(name: str):
    """Import bench/<name>.py as a module, leaving sys.path as it was."""
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", REPO / "bench" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = saved


def _inside(path: Path) -> bool:
    return Path(path).resolve().is_relative_to(REPO)


def test_the_benches_read_their_data_from_the_repository():
    solve = _load_bench("solve")
    assert _inside(solve.BENCH)
    saved = list(sys.path)
    try:
        for name, loader in solve.LOADERS.items():  # parse every instance (no solving)
            cases = list(loader())
            assert cases and all(published for _, _, published in cases), name
    finally:
        sys.path[:] = saved
    sched = _load_bench("solve_instances_sched_routing")
    assert _inside(sched.BENCH)

    forecast = _load_bench("forecast")
    assert _inside(forecast.DEFAULT)
    with open(forecast.DEFAULT, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len({r["unique_id"] for r in rows}) == 49 and {r["split"] for r in rows} == {"train", "test"}

    sanctions = _load_bench("sanctions")
    for folder in sanctions.FOLDERS.values():
        assert _inside(folder) and folder.is_dir()

    paid_calls = _load_bench("paid_calls")
    assert _inside(paid_calls.HONDA) and paid_calls.HONDA.read_bytes().startswith(b"{")


def test_every_bench_script_imports():
    """A bench's imports of its siblings and of the service still resolve (a renamed helper
    once left one unable to start)."""
    for script in sorted((REPO / "bench").glob("*.py")):
        module = _load_bench(script.stem)
        assert module.__doc__, script.name
