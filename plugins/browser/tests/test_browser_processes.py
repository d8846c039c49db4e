"""The browser's processes: four tasks at once on this 2-core machine, each within the memory
cap (measured from outside, every 100 ms, as the proportional set size of each task's
process group); a task past its memory cap or its time limit ends so and leaves no Chromium
process behind, nor its temporary profile directory; a worker killed with SIGKILL mid-task
leaves no Chromium behind, and the task finishes on another worker, charged once; the sweep
at start removes the profile directories of browsers that are gone, and only those."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from browser_support import Site, finished, one_task

from tollway.testing import credits_session, http_client, worker_for
from tollway_browser import session
from tollway_browser.settings import MEMORY_MB


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def descends_from_this_test(pid: int) -> bool:
    """Whether `pid` was started by this pytest process (through Playwright's driver or a worker
    it started): the suite runs two pytest processes side by side, and the other's browsers
    are not this test's."""
    me = os.getpid()
    with contextlib.suppress(OSError, IndexError, ValueError):
        while pid > 1:
            pid = _parent(pid)
            if pid == me:
                return True
    return False


def boot_seconds() -> float:
    """Now, in the clock /proc/<pid>/stat's start times count from (seconds since boot)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def browser_groups(since: float = 0.0) -> dict[int, int]:
    """Every running task browser of this test's (started after `since`, in boot seconds), by
    process group, with the pid of its leader's parent."""
    groups = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in session.marked(session.MARKER.encode() + b"="):
        with contextlib.suppress(OSError, IndexError):
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            started = int(stat[19]) / ticks  # starttime, the 22nd field of stat
            if stat[0] != "Z" and started >= since and descends_from_this_test(pid):
                groups[pid] = int(stat[1])
    return groups


async def profiles_while(work, seen: set[Path]):
    """Await `work`, noting meanwhile every running task browser's temporary profile directory."""
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            for pid in browser_groups():
                found = session.temporary_profile(pid)
                if found is not None:
                    seen.add(found)
            await asyncio.sleep(0.05)

    sampler = asyncio.ensure_future(sample())
    try:
        return await work
    finally:
        done.set()
        await sampler


def alive(pids: set[int]) -> set[int]:
    """Those of `pids` that still run (a zombie waiting for its parent runs no more)."""
    out = set()
    for pid in pids:
        with contextlib.suppress(OSError, IndexError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.add(pid)
    return out


# The caps and the kills are the processes', not the database's: once, on SQLite (the paid
# path is test_browser_task.py's on both; the killed worker's test runs on PostgreSQL, which
# a second worker process needs).
@pytest.mark.parametrize("db_kind", ["sqlite"], indirect=True)
async def test_four_tasks_at_once_stay_within_the_memory_cap(kernel_factory, site):
    kernel = await kernel_factory(installed={"tollway_browser"}, env={"TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow})
    peaks: dict[int, float] = {}
    most_at_once = 0
    done = asyncio.Event()
    began = 0.0  # set when the worker starts: these four browsers start after it

    def measure() -> dict[int, float]:
        return {pgid: session._pss_mb(session.group_members(pgid)) for pgid in browser_groups(since=began)}

    async def sample() -> None:
        nonlocal most_at_once
        while not done.is_set():
            # In a thread, as the service's own watch does: the tasks' pages share this loop.
            sizes = await asyncio.to_thread(measure)
            # browsers running pages at once (a group seen while it starts or dies holds ~1 MB)
            most_at_once = max(most_at_once, sum(1 for memory in sizes.values() if memory > 20))
            for pgid, memory in sizes.items():
                peaks[pgid] = max(peaks.get(pgid, 0.0), memory)
            await asyncio.sleep(0.2)

    body = {
        "start_url": f"{site.base}/fares",
        "steps": [
            {"action": "screenshot", "full_page": True},
            {"action": "wait_for", "timeout_s": 2},
            {"action": "pdf"},
        ],
    }
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = [(await client.post("/v1/tools/browser/task", json=body, headers=auth)).json() for _ in range(4)]
        # Only browsers started from here on are these four: one an earlier test of this process
        # left dying started before (start times count in 10 ms ticks).
        began = boot_seconds() - 0.02
        sampler = asyncio.ensure_future(sample())
        worker = worker_for(kernel, poll_s=0.05)
        worker.start()
        try:
            jobs = [await finished(client, a["request_id"], auth) for a in accepted]
        finally:
            await worker.stop()
            done.set()
            await sampler
    assert [j["result"]["status"] for j in jobs] == ["completed"] * 4, jobs
    cap = float(MEMORY_MB.default or 0)
    # A group seen for an instant while it starts or dies holds a megabyte or so: the four
    # tasks' browsers are the groups that ran pages (hundreds of MB each), each under the cap.
    running = {pgid: peak for pgid, peak in peaks.items() if peak > 20}
    assert most_at_once == 4 and len(running) == 4, peaks
    assert all(peak < cap for peak in running.values()), (peaks, cap)
    assert browser_groups() == {}


@pytest.mark.parametrize("db_kind", ["sqlite"], indirect=True)
async def test_a_task_past_its_memory_cap_cpu_cap_or_time_is_stopped_and_leaves_nothing(kernel_factory, site):
    kernel = await kernel_factory(
        installed={"tollway_browser"},
        env={
            "TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow,
            "TOLLWAY_BROWSER_MEMORY_MB": "700",
            "TOLLWAY_BROWSER_CPU_S": "6",
        },
    )
    wait = {"action": "wait_for", "selector": "#never", "timeout_s": 60}
    seen: dict[str, set[Path]] = {"hog": set(), "spin": set(), "slow": set()}
    hog = await profiles_while(
        one_task(kernel, {"start_url": f"{site.base}/hog", "steps": [wait], "time_limit_s": 60}), seen["hog"]
    )
    spin = await profiles_while(
        one_task(kernel, {"start_url": f"{site.base}/spin", "steps": [wait], "time_limit_s": 60}), seen["spin"]
    )
    slow = await profiles_while(
        one_task(kernel, {"start_url": f"{site.base}/gate", "steps": [wait], "time_limit_s": 5}), seen["slow"]
    )
    assert spin["status"] == "completed" and spin["result"]["status"] == "cpu_cap", spin["result"]["steps"]
    assert hog["status"] == "completed" and hog["result"]["status"] == "memory_cap", (
        hog["result"]["steps"],
        hog["result"]["console_errors"],
    )
    assert slow["status"] == "completed" and slow["result"]["status"] == "timed_out", slow
    assert slow["result"]["steps"][-1]["status"] == "failed"
    assert browser_groups() == {}
    # Each task's browser had its own temporary profile, and none is left on the disk.
    assert all(len(dirs) == 1 for dirs in seen.values()), seen
    assert [d for dirs in seen.values() for d in dirs if d.exists()] == []


REPO = Path(__file__).resolve().parents[3]


async def start_worker(kernel, site: Site) -> asyncio.subprocess.Process:
    """`tollway worker` on the test's database, with a 2 s lease (a dead worker's job moves on soon)."""
    env = {
        **os.environ,
        "TOLLWAY_HOME": str(kernel.config.plugin_env.get("TOLLWAY_HOME", "")),
        "TOLLWAY_DATABASE_URL": kernel.db.url,
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
        "TOLLWAY_RECEIPT_KEY": kernel.config.plugin_env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OFFLINE": "1",
        "TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow,
    }
    tollway = Path(sys.executable).with_name("tollway")
    return await asyncio.create_subprocess_exec(
        str(tollway), "worker", "--lease", "2", env=env, cwd=str(REPO), stderr=asyncio.subprocess.DEVNULL
    )


async def until(predicate, seconds: float = 60.0) -> None:
    for _ in range(int(seconds / 0.1)):
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached")


def browsers_of(worker: int) -> set[int]:
    """The processes of the browsers a worker process started (through its Playwright driver)."""
    groups = browser_groups()
    mine = set()
    for pgid, parent in groups.items():
        with contextlib.suppress(OSError, IndexError):
            grandparent = int(Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if worker in (parent, grandparent):
                mine |= set(session.group_members(pgid))
    return mine


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_a_killed_worker_leaves_no_browser_and_the_task_finishes_elsewhere_charged_once(kernel_factory, site):
    kernel = await kernel_factory(installed={"tollway_browser"}, env={"TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow})
    site.gate_open = False
    body = {
        "start_url": f"{site.base}/gate",
        "steps": [
            {"action": "wait_for", "selector": "#ready", "timeout_s": 60},
            {"action": "extract", "selector": "#ready"},
        ],
    }
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = (await client.post("/v1/tools/browser/task", json=body, headers=auth)).json()
        first = await start_worker(kernel, site)
        second = None
        try:
            await until(lambda: len(browsers_of(first.pid)) >= 3)
            chromium = browsers_of(first.pid)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            await until(lambda: not alive(chromium), seconds=15)
            site.gate_open = True
            second = await start_worker(kernel, site)
            job = await finished(client, accepted["request_id"], auth, seconds=90)
            left = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        finally:
            for proc in (first, second):
                if proc is not None and proc.returncode is None:
                    proc.terminate()
                    await proc.wait()
    assert job["status"] == "completed", job
    assert job["result"]["status"] == "completed" and job["result"]["extracts"][0]["value"] == "ready"
    assert left == "0.920000"  # charged once
    receipt = await kernel.receipts.get(accepted["receipt_id"])
    assert receipt["execution_status"] == "completed"
    await until(lambda: not browser_groups(), seconds=10)


def test_the_sweep_removes_only_the_profiles_of_browsers_that_are_gone():
    folder = Path(tempfile.mkdtemp(prefix="tollway-sweep-"))
    old = time.time() - session.STALE_PROFILE_S - 60
    left, running, launching = (folder / f"{session.PROFILE_PREFIX}{n}" for n in ("left", "running", "launching"))
    other = folder / "playwright-something-else"
    for path in (left, running, launching, other):
        (path / "Default").mkdir(parents=True)
        (path / "Default" / "Cookies").write_bytes(b"x")
    for path in (left, running, other):
        os.utime(path, (old, old))
    # A process naming `running` as its profile, the way a live browser's command line does.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"--user-data-dir={running}"])
    try:
        for _ in range(100):  # until its command line is readable
            if session._user_data_dir(Path(f"/proc/{holder.pid}/cmdline").read_bytes()) == running:
                break
            time.sleep(0.02)
        removed = session.sweep_profiles(folder)
    finally:
        holder.kill()
        holder.wait()
    try:
        assert removed == [left]
        assert not left.exists() and running.exists() and launching.exists() and other.exists()
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=True)
