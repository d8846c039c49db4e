"""The process pool of `cpu_bound` tools: children that never hold the parent's
sockets and die with the parent (docs/jobs.md, "The process pool")."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_INTERVAL_S = 0.5


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCH_INTERVAL_S)
        if os.getppid() != parent:  # re-parented: whoever started us is gone
            os._exit(1)


def _set_environment(values: dict[str, str | None]) -> None:
    """Set each variable of `values` (None: unset it)."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _release_fork_server() -> None:
    """A process forked by the fork server inherits the pipe that keeps the fork server
    alive (so that it could start processes of its own). Closed here, the fork server
    sees its end of the pipe close when the pool's owner dies, and exits."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None  # type: ignore[union-attr]


def die_with_parent(environment: dict[str, str | None] | None = None) -> None:
    """Pool initializer: SIGKILL when the parent dies (Linux `PR_SET_PDEATHSIG`), and
    on any platform a daemon thread that exits once the parent pid changes. The
    variables in `environment` get back the values the pool's owner has (the fork
    server was started with others), for whatever a tool starts itself."""
    _set_environment(environment or {})
    _release_fork_server()
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent == 1 or os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="tollway-parent-watch", daemon=True).start()


def _parent_path() -> list[str]:
    """This process's module search path, each entry resolved against the folder it
    was started in (an empty entry is that folder), without repeats."""
    return list(dict.fromkeys(os.path.abspath(entry) for entry in sys.path))


@contextlib.contextmanager
def _launch_environment() -> Iterator[dict[str, str | None]]:
    """While the fork server starts: its interpreter skips the working directory
    (`PYTHONSAFEPATH`, as `python -P`: `-c` would put it first on its path) and
    searches this process's path first (`PYTHONPATH`), so its preloaded modules,
    and the pool processes forked from it, are the ones this process imported
    whatever folder it runs in. Yields the two variables' values before."""
    before = {name: os.environ.get(name) for name in ("PYTHONSAFEPATH", "PYTHONPATH")}
    os.environ["PYTHONSAFEPATH"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(_parent_path())
    try:
        yield before
    finally:
        _set_environment(before)


def cpu_pool(tools: Iterable[Any], max_workers: int | None = None) -> ProcessPoolExecutor:
    """A pool for `tools` (their `run` functions' modules preloaded once).

    Processes come from a fork server: it is started by fork+exec with only its own
    pipes, so neither it nor the processes it forks inherit a listening socket or
    any other descriptor of this process. A pool process's parent is the fork
    server, which exits when this process does (its keep-alive pipe closes: the
    pool processes let go of their copies); the pool processes then get SIGKILL,
    so a killed server or worker leaves no child computing an abandoned job or
    holding its port.
    """
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        modules = sorted({t.run.__module__ for t in tools if getattr(t, "cpu_bound", False)})
        context.set_forkserver_preload(modules)
        from multiprocessing import forkserver

        with _launch_environment() as environment:
            forkserver.ensure_running()  # now, not at the first job: the first job does not wait for the imports
    else:
        environment = {}
    workers = max_workers or max(1, (os.cpu_count() or 2) - 1)
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=die_with_parent, initargs=(environment,)
    )


__all__ = ["cpu_pool", "die_with_parent"]
