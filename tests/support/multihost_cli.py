"""The `tollway` command (runtime/cli.py's `main`) for the multi-host test, with the test plugins as its
only installed plugins, each process started in a host's network namespace by a fork server.

`python -m tests.support.multihost_cli FD...` (the descriptors it was given) imports the command and the plugins once, then reads
one JSON line per process to start on stdin, `{"netns", "argv", "env", "log"}` (or
`"module"` instead of `"argv"`: that module's `main()` runs instead of the command; with
`"stdin_fd"`/`"stdout_fd"`, descriptors this server was given, as its stdin and stdout), and
forks: the child enters the namespace (setns, as `ip netns exec` does), takes `env` as its
whole environment and runs `tollway ARGV` writing to `log`. It answers each line with the
child's pid. Importing Tollway costs ~5 s of CPU a process, and the test starts six at once
on a 2-core machine; forked, they pay it once. The command is otherwise the real one (its
arguments, settings, kernel, uvicorn, worker and reconciler).

The plugins: the job tools `add_numbers`, `gate_job` and `gate_inline`
(tests/support/jobs_plugin.py), `echo_words`, `test_file_feed`, a watch source reading the
JSON file TOLLWAY_TEST_FEED_FILE names (`{key: value}`), which the test edits from outside,
and the installed goals and web plugins (compute goals, and the llm provider they use).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from tests.support.echo_plugin import EchoPlugin
from tests.support.feed_plugin import check_key
from tests.support.jobs_plugin import ADD, GATE, GATE_INLINE
from tollway import Observed, Snapshot, WatchSource, hookimpl

FEED_ATTRIBUTE = "test_file_feed"
FEED_ENV = "TOLLWAY_TEST_FEED_FILE"
CLONE_NEWNET = 0x40000000  # <linux/sched.h>


async def _poll_file(services: Any, watched_keys: Sequence[str]) -> Snapshot:
    with open(os.environ[FEED_ENV]) as fh:
        feed = json.load(fh)
    return Snapshot(values={k: Observed(v, as_of="2026-11-01") for k, v in feed.items()}, complete=True)


class FileFeedPlugin:
    @hookimpl
    def register_watch_sources(self, register: Any) -> None:
        register(
            WatchSource(
                attribute=FEED_ATTRIBUTE,
                entity_types=("item",),
                source="test file feed",
                poll=_poll_file,
                check_key=check_key,
                description="A test feed of items read from a file.",
            )
        )


class GateJobsPlugin:
    """The job tools without `cpu_sum`: no process pool beside each worker."""

    @hookimpl
    def register_tools(self, register: Any) -> None:
        for tool in (ADD, GATE, GATE_INLINE):
            register(tool)


JOBS, ECHO, FILE_FEED = GateJobsPlugin(), EchoPlugin(), FileFeedPlugin()


INSTALLED = ("tollway_goals", "tollway_web")  # goals, and the web plugin's llm provider they need
_FOUND = [ep for ep in entry_points(group="tollway") if ep.name in INSTALLED]


def _test_entry_points(group: str | None = None, **_: Any) -> list[EntryPoint]:
    names = ("JOBS", "ECHO", "FILE_FEED")
    ours = [EntryPoint(f"tollway_test_{n.lower()}", f"{__name__}:{n}", group or "tollway") for n in names]
    return ours + _FOUND


def _enter_namespace(name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name} failed")
    finally:
        os.close(fd)


def _child(command: dict[str, Any], passed: list[int]) -> int:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _enter_namespace(command["netns"])
    os.environ.clear()
    os.environ.update(command["env"])
    log = os.open(command["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(command.get("stdin_fd", os.open(os.devnull, os.O_RDONLY)), 0)  # not the server's command pipe
    if "module" in command:
        os.dup2(command.get("stdout_fd", log), 1)
        os.dup2(log, 2)
        _close(passed)
        sys.stdin = open(0)  # noqa: SIM115 - the child's own stdin for its life
        sys.stdout = open(1, "w")  # noqa: SIM115
        return importlib.import_module(command["module"]).main() or 0
    os.dup2(command.get("stdout_fd", log), 1)
    os.dup2(log, 2)
    _close(passed)
    from tollway._runtime import cli

    return cli.main(command["argv"])


def _close(fds: list[int]) -> None:
    """Close the descriptors the server was given (a child keeps its own as 0 and 1), so a
    pipe ends when the one child writing to it ends."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def serve_forks(passed: list[int]) -> None:
    from tollway._runtime import cli, plugins, service, worker  # noqa: F401 - imported once, for every child
    from tollway._runtime.database import database  # noqa: F401

    importlib.import_module("tests.support.multihost_load")
    importlib.import_module("tests.support.multihost_model")
    for ep in _FOUND:
        ep.load()
    plugins.entry_points = _test_entry_points  # what load_entry_point_plugins reads
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they end
    for line in sys.stdin:
        command = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(command, passed)
            except BaseException as exc:  # the child's end: say why in its log
                print(f"multihost child failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            finally:
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                os._exit(code if isinstance(code, int) else 1)
        for fd in (command.get("stdin_fd"), command.get("stdout_fd")):
            if fd is not None:
                os.close(fd)
        print(pid, flush=True)


if __name__ == "__main__":
    serve_forks([int(fd) for fd in sys.argv[1:]])
