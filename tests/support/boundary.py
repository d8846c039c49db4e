"""The repository-boundary audit: no test reads or writes a file outside the places a
fresh clone has.

A clone of the repository must pass `make test` on its own, so the tests, the plugins
and the code under test may touch files only in:

* the repository itself (sources, `plugins/*/tests/fixtures/`, `bench/instances/`);
* the Python installation running the tests (the `.venv` and the interpreter it was
  made from: `sys.prefix`, `sys.base_prefix` and their `exec_` twins, plus every
  `sys.path` entry outside the repository, where packages are installed);
* the temporary directory (`tempfile.gettempdir()`: pytest's `tmp_path` and friends);
* the system's own locations, which every machine has and no project data lives in:
  `/dev`, `/proc`, `/sys`, `/etc` (certificates, time zone, resolver), `/usr`, `/lib`,
  `/lib64`, `/bin`, `/sbin`, `/run`, `/var/run`.

A Python audit hook (`sys.addaudithook`, PEP 578) sees every `open()` (including the
ones `pathlib` and imports make), directory listing, `mkdir`, `remove`, `rename` and
`rmdir` in this process and its threads. A path outside the places above is recorded,
and the test phase (setup, call or teardown) or the collection during which it happened
is turned into a failure naming the path; anything recorded outside a test (during
start-up, for instance) fails the session at the end. The hook never raises itself, so
code that swallows errors cannot hide an access from it.

What it cannot see: child processes (the uvicorn and worker processes some tests start,
and `pip` in the plugin-template test) are not audited; `tests/interop/test_standalone.py`
checks the sources for paths that leave the repository instead, which covers what
those processes are told to read. `os.stat` and friends (`exists()`, `is_dir()`) raise
no audit event, so merely probing a path is not caught, reading it is.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Events carrying the path as their first argument; a relative path with a directory
# file descriptor (`dir_fd`) is relative to an already-audited open directory.
EVENTS = {
    "open": None,
    "os.listdir": None,
    "os.scandir": None,
    "os.mkdir": 2,
    "os.remove": 1,
    "os.rmdir": 1,
    "os.rename": (2, 3),
    "shutil.rmtree": 1,
}
SYSTEM = ("/dev", "/proc", "/sys", "/etc", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/run", "/var/run")


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def allowed_roots() -> tuple[str, ...]:
    """Every directory outside the repository under which an access is allowed."""
    roots = {tempfile.gettempdir(), *SYSTEM}
    roots.update(p for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix) if p)
    roots.update(p for p in sysconfig.get_paths().values() if p)
    roots.update(p for p in sys.path if p)  # installed packages, zip files included
    out: set[str] = set()
    for r in roots:
        out.add(_norm(r))
        out.add(_norm(os.path.realpath(r)))
    return tuple(sorted(out))


class Boundary:
    """Records accesses outside the repository and `roots`.

    A root that contains the repository's parent folder (say the temp dir, when the
    clone lives at /tmp/somewhere/tollway) does not cover the repository's siblings:
    a folder beside the repository is exactly what a fresh clone lacks. The one
    case where that cannot be told apart is a clone placed directly in the temp dir,
    whose siblings are everyone's temp files; there the temp dir stays allowed and the
    source check of tests/interop/test_standalone.py is what guards paths that climb out.
    """

    def __init__(self, repo: Path, roots: tuple[str, ...]) -> None:
        self.repo = _norm(os.path.realpath(repo))
        self.repo_parent = os.path.dirname(self.repo)
        temp = _norm(os.path.realpath(tempfile.gettempdir()))
        self.guard_siblings = self.repo_parent != temp
        self.roots = tuple(r for r in roots if not _under(r, self.repo))
        self.violations: list[tuple[str, str]] = []  # (event, absolute path)
        self._lock = threading.Lock()

    def _inside(self, path: str) -> bool:
        if _under(path, self.repo):
            return True
        sibling = self.guard_siblings and _under(path, self.repo_parent)
        return any(_under(path, root) and not (sibling and _under(self.repo_parent, root)) for root in self.roots)

    def inside(self, path: str) -> bool:
        """`path` (absolute) as written, or else with its symlinks resolved, is allowed."""
        return self._inside(_norm(path)) or self._inside(_norm(os.path.realpath(path)))

    def check(self, event: str, path: object) -> None:
        if isinstance(path, int) or path is None:
            return  # a file descriptor: its own open was audited
        try:
            raw = os.fsdecode(os.fspath(path))
        except TypeError:
            return
        if not raw:
            return
        absolute = os.path.abspath(raw)
        if not self.inside(absolute):
            with self._lock:
                self.violations.append((event, absolute))

    def hook(self, event: str, args: tuple) -> None:
        if event not in EVENTS:
            return
        try:
            dir_fd_at = EVENTS[event]
            if isinstance(dir_fd_at, tuple):  # os.rename(src, dst, src_dir_fd, dst_dir_fd)
                if args[2] is None:
                    self.check(event, args[0])
                if args[3] is None:
                    self.check(event, args[1])
                return
            if dir_fd_at is not None and len(args) > dir_fd_at and args[dir_fd_at] is not None:
                return
            if args:
                self.check(event, args[0])
        except Exception:  # pragma: no cover - an audit hook must never break the audited call
            with self._lock:
                self.violations.append((event, f"<audit hook could not read the arguments {args!r}>"))


BOUNDARY = Boundary(REPO, allowed_roots())
sys.addaudithook(BOUNDARY.hook)

_PHASE_START = pytest.StashKey[int]()
_reported = 0  # violations already attributed to a test phase or collection


def _describe(found: list[tuple[str, str]]) -> str:
    lines = [f"  {event}: {path}" for event, path in dict.fromkeys(found)]
    return (
        "touched a path outside the repository, the Python installation, the temp dir and "
        "the system directories (a fresh clone has no such file; see tests/support/boundary.py):\n" + "\n".join(lines)
    )


def _take_since(start: int) -> list[tuple[str, str]]:
    global _reported
    with BOUNDARY._lock:
        found = BOUNDARY.violations[start:]
        _reported = len(BOUNDARY.violations)
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    item.stash[_PHASE_START] = len(BOUNDARY.violations)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    item.stash[_PHASE_START] = len(BOUNDARY.violations)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    item.stash[_PHASE_START] = len(BOUNDARY.violations)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    found = _take_since(item.stash.get(_PHASE_START, len(BOUNDARY.violations)))
    if found:
        message = f"{item.nodeid} ({call.when}) " + _describe(found)
        if report.failed:
            report.sections.append(("repository boundary", message))
        else:
            report.outcome = "failed"
            report.longrepr = message
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    start = len(BOUNDARY.violations)
    report = yield
    found = _take_since(start)
    if found:
        message = f"collecting {collector.nodeid or collector.name}: " + _describe(found)
        if report.failed:
            report.sections.append(("repository boundary", message))
        else:
            report.outcome = "failed"
            report.longrepr = message
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    left = BOUNDARY.violations[_reported:]
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "outside any test, the run " + _describe(left)
        if reporter is not None:
            reporter.write_line(message, red=True)
        else:  # pragma: no cover
            print(message, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_report_header(config: pytest.Config) -> str:
    return f"repository boundary: file accesses outside {REPO} and the Python/temp/system directories fail the test"
