"""One browser task in one fresh Chromium: the proxy it must use, its process group, its
memory and CPU caps, its steps, and what it leaves (the result, the artifacts, the profile's
new storage state). Runs on a worker, inside the task's job; never keeps a browser between
tasks, so nothing of one task (cookies, cache, service workers) reaches the next — nor on
the disk: the temporary profile directory Playwright made for the browser is removed when
the task ends, however it ended, and those of dead tasks at the service's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import signal
import stat
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec
from playwright.async_api import BrowserContext, Frame, Locator, Page, async_playwright
from playwright.async_api import Error as PlaywrightError

from . import wire
from .proxy import FilteringProxy

MARKER = "--tollway-task"  # a switch Chromium ignores, on its main process's command line: how it is found
WATCH_S = 0.25
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PROFILE_PREFIX = "playwright_chromiumdev_profile-"  # Playwright's temporary profile of a launched Chromium
USER_DATA_DIR = b"--user-data-dir="
# A launch names its directory on the browser's command line within moments of making it:
# one older than this that no running process names is left over.
STALE_PROFILE_S = 120.0
STEP_TIMEOUT_S = 15.0
MAX_TEXT = 200_000
MAX_ROWS = 2_000
MAX_LINKS = 1_000
MAX_ARTIFACT_BYTES = 10 * 1024 * 1024
WEB_SCHEMES = ("http", "https")
# Navigations the main frame may end on besides web pages: the blank page and Chromium's own error page.
QUIET_URLS = ("about:blank", "chrome-error://chromewebdata/")
MAX_SCHEME_BLOCKS = 100  # a page looping over made-up URLs fills the result no further

# Chromium's switches: the proxy as the only way out (loopback not bypassed), nothing sent on
# its own (component updates, safe browsing, metrics), no QUIC or WebRTC UDP around the proxy.
CHROMIUM_ARGS = (
    "--proxy-bypass-list=<-loopback>",
    "--disable-quic",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-sync",
    "--no-pings",
    "--no-first-run",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-dev-shm-usage",
    "--renderer-process-limit=4",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-client-side-phishing-detection",
    "--safebrowsing-disable-auto-update",
    "--disable-features=AutofillServerCommunication,OptimizationHintsFetching,OptimizationGuideModelDownloading,"
    "Translate,MediaRouter,CertificateTransparencyComponentUpdater,AccountConsistency,SigninInterceptBubble,"
    "ChromeSignin,DiceWebSigninInterception,PushMessaging",
)


@dataclasses.dataclass(frozen=True)
class Limits:
    chromium: str
    allow: frozenset[tuple[str, int]]
    memory_mb: float
    cpu_s: float
    max_response_bytes: int


@dataclasses.dataclass
class Shot:
    kind: str  # screenshot, pdf
    media_type: str
    body: bytes


@dataclasses.dataclass
class Outcome:
    status: str = "completed"
    url: str = ""
    title: str = ""
    started: bool = False  # the start page was reached: the task did something
    start_problem: str | None = None
    extracts: list[wire.BrowserExtracted] = dataclasses.field(default_factory=list)
    answer: str | None = None
    steps: list[wire.BrowserStepLog] = dataclasses.field(default_factory=list)
    console_errors: list[str] = dataclasses.field(default_factory=list)
    blocked: list[wire.BrowserBlocked] = dataclasses.field(default_factory=list)
    shots: list[Shot] = dataclasses.field(default_factory=list)
    storage_state: dict[str, Any] | None = None


class StepFailed(Exception):
    def __init__(self, detail: str, status: str = "failed") -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


Report = Callable[[str], Awaitable[object]]
Agent = Callable[["Browser"], Awaitable[None]]


# -- the process group ------------------------------------------------------------------
def marked(prefix: bytes) -> list[int]:
    """Chromium main processes with an argument starting `prefix` (`--tollway-task=<token>`):
    each the leader of its process group (Playwright starts it so), which its children
    share. Those children, and the crash handlers it starts, carry no such argument."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not any(v.startswith(prefix) for v in (entry / "cmdline").read_bytes().split(b"\0")):
                continue
            if os.getpgid(int(entry.name)) != int(entry.name):
                continue
            found.append(int(entry.name))
        except OSError:
            continue
    return found


def _browser_pid(token: str) -> int | None:
    found = marked(f"{MARKER}={token}".encode())
    return found[0] if found else None


def _user_data_dir(cmdline: bytes) -> Path | None:
    for arg in cmdline.split(b"\0"):
        if arg.startswith(USER_DATA_DIR):
            return Path(os.fsdecode(arg[len(USER_DATA_DIR) :]))
    return None


def temporary_profile(pid: int) -> Path | None:
    """The temporary profile directory Playwright gave the browser `pid` (its --user-data-dir)."""
    try:
        found = _user_data_dir(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return None
    return found if found is not None and found.name.startswith(PROFILE_PREFIX) else None


def remove_profile(path: Path | None) -> None:
    """Remove a browser's temporary profile; a dying browser's last writes may race the
    first pass, so it tries again."""
    if path is None or not path.name.startswith(PROFILE_PREFIX):
        return
    for _ in range(5):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.1)


def sweep_profiles(folder: Path | None = None) -> list[Path]:
    """Remove the temporary profiles left by browsers that are gone (a worker killed outright
    takes its browsers with it before their task could remove theirs): each of this user's
    `playwright_chromiumdev_profile-*` directories in the temporary folder that no running
    process names as its --user-data-dir and that is older than a launch. Answers those removed."""
    in_use = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                found = _user_data_dir((entry / "cmdline").read_bytes())
                if found is not None:
                    in_use.add(found)
    removed = []
    now = time.time()
    for path in (folder or Path(tempfile.gettempdir())).glob(f"{PROFILE_PREFIX}*"):
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or path in in_use:
            continue
        if now - info.st_mtime < STALE_PROFILE_S:
            continue
        remove_profile(path)
        removed.append(path)
    return removed


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:  # pgrp is the 5th field of stat, the 3rd after the name
            members.append(int(entry.name))
    return members


def _rss_and_cpu(pids: list[int]) -> tuple[float, float]:
    """(resident set size in MB, CPU seconds) of these processes together, from one read of
    each `/proc/<pid>/stat`. The RSS sum counts shared pages once per process, so it is never
    below the PSS sum: a group whose RSS is under a cap is under it in PSS too."""
    pages = 0
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
            pages += int(fields[21])  # rss, in pages
        except (OSError, ValueError, IndexError):
            continue
    return pages * PAGE_BYTES / 2**20, ticks / CLOCK_TICKS


def _pss_mb(pids: list[int]) -> float:
    """The proportional set size of these processes together, in MB: shared pages split
    among their sharers. Costly for the kernel (it walks each process's page tables), so
    read only when the cheap RSS sum is past a cap."""
    pss_kb = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss_kb += int(line.split()[1])
                    break
        except (OSError, ValueError, IndexError):
            continue
    return pss_kb / 1024


def _over(pgid: int, limits: Limits) -> str | None:
    """Which cap the group is past, if any ("memory_cap" by PSS, "cpu_cap")."""
    pids = group_members(pgid)
    rss, cpu = _rss_and_cpu(pids)
    if rss > limits.memory_mb and _pss_mb(pids) > limits.memory_mb:
        return "memory_cap"
    return "cpu_cap" if cpu > limits.cpu_s else None


def kill_group(pgid: int | None) -> None:
    if pgid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    for pid in group_members(pgid):  # a member that left the group's leader behind
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


async def killed(pgid: int | None, seconds: float = 3.0) -> None:
    """Kill the group and wait (a few seconds at most) until its processes have exited: one
    SIGKILLed a moment ago may still be tearing down its memory (and writing its profile)."""
    kill_group(pgid)
    if pgid is None:
        return
    for _ in range(int(seconds / 0.05)):
        living = []
        for pid in group_members(pgid):
            with contextlib.suppress(OSError, IndexError):
                if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    living.append(pid)
        if not living:
            return
        await asyncio.sleep(0.05)


class Watch:
    """Measures the browser's processes every 250 ms; kills the group past a cap."""

    def __init__(self, token: str, limits: Limits, outcome: Outcome) -> None:
        self.token = token
        self.limits = limits
        self.outcome = outcome
        self.pgid: int | None = None
        self.profile: Path | None = None  # the browser's temporary profile directory
        self.capped = asyncio.Event()

    async def run(self) -> None:
        for _ in range(200):
            pid = await asyncio.to_thread(_browser_pid, self.token)
            if pid is not None:
                self.profile = temporary_profile(pid)
                with contextlib.suppress(ProcessLookupError):
                    self.pgid = os.getpgid(pid)
                break
            await asyncio.sleep(0.05)
        if self.pgid is None:
            return
        while True:
            # Off the event loop: the task's page and its proxy share that loop, and reading
            # /proc for a few browsers at once is milliseconds of system time.
            over = await asyncio.to_thread(_over, self.pgid, self.limits)
            if over is not None:
                self.outcome.status = over
                self.capped.set()
                kill_group(self.pgid)
                return
            await asyncio.sleep(WATCH_S)


# -- the main frame's schemes ------------------------------------------------------------
def off_the_web(url: str) -> bool:
    """A main frame's navigation to anything but an http(s) page or the blank page (`data:`,
    `file:`, `blob:`, `filesystem:`, `chrome:`...); a `javascript:` URL runs in the page
    it is on, and Chromium's error page is where a refused navigation ends."""
    scheme = url.split(":", 1)[0].lower()
    return scheme not in (*WEB_SCHEMES, "javascript") and url.split("#", 1)[0] not in QUIET_URLS


class SchemeGuard:
    """Our own stop, besides Chromium's, for a page's main frame leaving the web: a script's
    `location`, a link, a form or `window.open` naming a `data:`, `file:`, `blob:` or other
    URL. Each page (popups too) gets a DevTools session of its own: a navigation the page
    asks for is reported in `blocked` (reason `scheme`) and, where Chromium would carry it
    out (`blob:`), replaced by the blank page before it commits; one that commits all the
    same is replaced once it has."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.reported: set[str] = set()
        self.pending: set[asyncio.Future[Any]] = set()

    def report(self, url: str) -> None:
        if url in self.reported or len(self.reported) >= MAX_SCHEME_BLOCKS:
            return
        self.reported.add(url)
        self.outcome.blocked.append(
            wire.BrowserBlocked(url=url[:300], reason="scheme", detail="a page opens only http(s) pages")
        )

    def later(self, work: Awaitable[Any]) -> None:
        async def quietly() -> None:
            with contextlib.suppress(PlaywrightError):
                await work

        done = asyncio.ensure_future(quietly())
        self.pending.add(done)
        done.add_done_callback(self.pending.discard)

    async def watch(self, context: BrowserContext, page: Page) -> None:
        try:
            session = await context.new_cdp_session(page)
            await session.send("Page.enable")
            main = (await session.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
        except PlaywrightError:  # a page closed at once (past max_pages)
            return

        def blank() -> None:
            self.later(session.send("Page.navigate", {"url": "about:blank"}))

        def asked(event: dict[str, Any], stop: bool) -> None:
            url = str(event.get("url") or "")
            if event.get("frameId") == main and off_the_web(url):
                self.report(url)
                if stop:
                    blank()

        def committed(frame: Frame) -> None:
            if frame == page.main_frame and off_the_web(frame.url):
                self.report(frame.url)
                blank()

        # Scheduled: every navigation a script or a link asks for, also those Chromium refuses in
        # the page (data:, file:); requested: those it would carry out, still to be stopped.
        session.on("Page.frameScheduledNavigation", lambda e: asked(e, stop=False))
        session.on("Page.frameRequestedNavigation", lambda e: asked(e, stop=True))
        session.on("Page.windowOpen", lambda e: self.report(str(e["url"])) if off_the_web(str(e["url"])) else None)
        page.on("framenavigated", committed)
        committed(page.main_frame)

    async def close(self) -> None:
        for pending in list(self.pending):
            pending.cancel()
        await asyncio.gather(*self.pending, return_exceptions=True)


# -- one task ---------------------------------------------------------------------------
class Browser:
    """The task's page and what it has collected: what the steps and the goal loop act on."""

    def __init__(self, page: Page, outcome: Outcome, deadline: float, max_pages: int, report: Report) -> None:
        self.page = page
        self.outcome = outcome
        self.deadline = deadline
        self.max_pages = max_pages
        self.report = report

    def remaining_ms(self) -> float:
        return max(0.0, (self.deadline - time.monotonic()) * 1000)

    def timeout_ms(self, seconds: float = STEP_TIMEOUT_S) -> float:
        return max(1.0, min(seconds * 1000, self.remaining_ms()))

    async def run_step(self, number: int, step: wire.BrowserStep, of: int | None = None) -> None:
        """Run one step and log it; raises StepFailed when it failed or was blocked."""
        action = step.action
        await self.report(f"step {number}{f'/{of}' if of else ''}: {action}")
        began = time.monotonic()
        try:
            await self._act(number, step)
        except StepFailed as failed:
            self._log(number, action, failed.status, began, failed.detail)
            raise
        except PlaywrightError as exc:
            detail = _short(exc)
            self._log(number, action, "failed", began, detail)
            raise StepFailed(detail) from None
        self._log(number, action, "ok", began, None)

    def _log(self, number: int, action: str, status: str, began: float, detail: str | None) -> None:
        ms = int((time.monotonic() - began) * 1000)
        self.outcome.steps.append(wire.BrowserStepLog(step=number, action=action, status=status, ms=ms, detail=detail))

    async def goto(self, url: str) -> None:
        if urlsplit(url).scheme.lower() not in WEB_SCHEMES:
            self.outcome.blocked.append(wire.BrowserBlocked(url=url, reason="scheme", detail="only http(s) pages open"))
            raise StepFailed(f"{url[:100]} is not an http(s) URL", "blocked")
        try:
            response = await self.page.goto(url, timeout=self.timeout_ms(30), wait_until="load")
        except PlaywrightError as exc:
            detail = _short(exc)
            blocked = "ERR_TUNNEL_CONNECTION_FAILED" in detail
            raise StepFailed(detail, "blocked" if blocked else "failed") from None
        if response is not None and response.headers.get("x-tollway-blocked"):
            raise StepFailed(f"{url[:200]} was refused by the proxy", "blocked")

    def locate(self, step: Any, default: str | None = None) -> Locator | None:
        page = self.page
        if step.role:
            found = page.get_by_role(step.role, name=step.name) if step.name else page.get_by_role(step.role)
        elif step.label:
            found = page.get_by_label(step.label)
        elif step.text:
            found = page.get_by_text(step.text)
        elif step.selector:
            found = page.locator(step.selector)
        elif default is not None:
            found = page.locator(default)
        else:
            return None
        return found.first

    def _need(self, step: Any) -> Locator:
        found = self.locate(step)
        if found is None:
            raise StepFailed("name the element: role (and name), label, text or selector")
        return found

    async def _act(self, number: int, step: wire.BrowserStep) -> None:
        t = self.timeout_ms()
        action = step.action
        if action == "goto":
            await self.goto(step.url or "")
        elif action == "click":
            await self._need(step).click(timeout=t)
        elif action == "fill":
            await self._need(step).fill(step.value or "", timeout=t)
        elif action == "select":
            await self._need(step).select_option(step.value or "", timeout=t)
        elif action == "press":
            found = self.locate(step)
            if found is None:
                await self.page.keyboard.press(step.key or "")
            else:
                await found.press(step.key or "", timeout=t)
        elif action == "wait_for":
            t = self.timeout_ms(step.timeout_s)
            found = self.locate(step)
            if found is not None:
                await found.wait_for(state="visible", timeout=t)
            elif step.url_contains:
                part = step.url_contains
                await self.page.wait_for_url(lambda url: part in url, timeout=t)
            else:
                await self.page.wait_for_load_state("networkidle", timeout=t)
        elif action == "scroll":
            found = self.locate(step)
            if found is None:
                await self.page.mouse.wheel(0, step.dy)
            else:
                await found.scroll_into_view_if_needed(timeout=t)
        elif action == "extract":
            self.outcome.extracts.append(await self._extract(number, step, t))
        elif action == "screenshot":
            found = self.locate(step)
            if found is None:
                body = await self.page.screenshot(full_page=step.full_page, timeout=t)
            else:
                body = await found.screenshot(timeout=t)
            self._keep(Shot("screenshot", "image/png", body))
        else:
            self._keep(Shot("pdf", "application/pdf", await self.page.pdf()))

    def _keep(self, shot: Shot) -> None:
        if len(shot.body) > MAX_ARTIFACT_BYTES:
            raise StepFailed(f"the {shot.kind} is larger than {MAX_ARTIFACT_BYTES // (1024 * 1024)} MB")
        self.outcome.shots.append(shot)

    async def _extract(self, number: int, step: wire.BrowserStep, t: float) -> wire.BrowserExtracted:
        out = wire.BrowserExtracted(step=number, what=step.what, save_as=step.save_as)
        if step.what == "text":
            out.value = (await self.locate(step, "body").inner_text(timeout=t))[:MAX_TEXT]  # type: ignore[union-attr]
        elif step.what == "html":
            found = self.locate(step)
            html = await (self.page.content() if found is None else found.inner_html(timeout=t))
            out.value = html[:MAX_TEXT]
        elif step.what == "attribute":
            if not step.attribute:
                raise StepFailed("name the attribute to extract")
            out.value = await self._need(step).get_attribute(step.attribute, timeout=t)
        elif step.what == "table":
            rows = await self.locate(step, "table").evaluate(TABLE_ROWS, timeout=t)  # type: ignore[union-attr]
            out.rows = [[str(cell) for cell in row] for row in rows[:MAX_ROWS]]
        else:
            links = await self.locate(step, "body").evaluate(LINKS, timeout=t)  # type: ignore[union-attr]
            out.links = [wire.BrowserLink(text=str(a["text"]), href=str(a["href"])) for a in links[:MAX_LINKS]]
        return out


TABLE_ROWS = """(table) => Array.from(table.rows).map(
    (row) => Array.from(row.cells).map((cell) => cell.innerText.trim()))"""
LINKS = """(root) => Array.from(root.querySelectorAll('a[href]')).map(
    (a) => ({text: a.innerText.trim(), href: a.href}))"""


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _console(outcome: Outcome, text: str) -> None:
    if len(outcome.console_errors) < 100:
        outcome.console_errors.append(text[:500])


async def run_task(
    task: wire.BrowserTaskInput,
    limits: Limits,
    report: Report,
    *,
    storage_state: dict[str, Any] | None = None,
    keep_state: bool = False,
    agent: Agent | None = None,
) -> Outcome:
    """Run `task` in a fresh Chromium behind a fresh filtering proxy; the browser's whole
    process group is gone when this returns, whatever happened."""
    outcome = Outcome()
    proxy = FilteringProxy(allow=limits.allow, max_response_bytes=limits.max_response_bytes)
    await proxy.start()
    token = uuid.uuid4().hex
    watch = Watch(token, limits, outcome)
    guard = SchemeGuard(outcome)
    watcher: asyncio.Task[None] | None = None
    deadline = time.monotonic() + task.time_limit_s
    playwright = await async_playwright().start()
    try:
        await report("starting the browser")
        browser = await playwright.chromium.launch(
            executable_path=limits.chromium,
            headless=True,
            args=[f"--proxy-server=http://127.0.0.1:{proxy.port}", *CHROMIUM_ARGS, f"{MARKER}={token}"],
            timeout=30_000,
        )
        watcher = asyncio.ensure_future(watch.run())
        context = await browser.new_context(
            storage_state=storage_state,  # type: ignore[arg-type]
            accept_downloads=False,  # a download is cancelled (and capped by the proxy anyway)
            service_workers="allow",
            viewport={"width": 1280, "height": 800},
        )
        page = await context.new_page()
        pages = [page]
        await guard.watch(context, page)

        def on_page(opened: Page) -> None:
            pages.append(opened)
            if len(pages) > task.max_pages:
                outcome.blocked.append(
                    wire.BrowserBlocked(url=opened.url, reason="max_pages", detail=f"more than {task.max_pages} pages")
                )
                asyncio.ensure_future(opened.close())
            else:
                guard.later(guard.watch(context, opened))

        context.on("page", on_page)
        page.on("console", lambda m: _console(outcome, m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: _console(outcome, str(e)))
        driver = Browser(page, outcome, deadline, task.max_pages, report)
        try:
            async with asyncio.timeout_at(asyncio.get_running_loop().time() + task.time_limit_s):
                await _steps(task, driver, agent)
        except TimeoutError:
            if outcome.status == "completed":
                outcome.status = "timed_out"
        except PlaywrightError as exc:
            if not watch.capped.is_set():
                if not outcome.started:
                    outcome.start_problem = _short(exc)
                outcome.status = "step_failed" if outcome.started else outcome.status
        if keep_state and outcome.started and not watch.capped.is_set():
            with contextlib.suppress(PlaywrightError, TimeoutError):
                async with asyncio.timeout(5):
                    outcome.storage_state = await context.storage_state()
        with contextlib.suppress(PlaywrightError, TimeoutError):
            async with asyncio.timeout(3):
                outcome.url = page.url
                outcome.title = await page.title()
        with contextlib.suppress(PlaywrightError, TimeoutError):
            async with asyncio.timeout(5):
                await browser.close()
    finally:
        await guard.close()
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await killed(watch.pgid)  # whatever the browser left running
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await playwright.stop()
        # Playwright removes it on a clean close; not after a kill, nor when its own removal
        # raced the dying browser's last writes.
        await asyncio.to_thread(remove_profile, watch.profile)
        await proxy.close()
        outcome.blocked.extend(msgspec.convert(proxy.blocked, list[wire.BrowserBlocked]))
    return outcome


async def _steps(task: wire.BrowserTaskInput, driver: Browser, agent: Agent | None) -> None:
    outcome = driver.outcome
    began = time.monotonic()
    await driver.report("opening the start page")
    try:
        await driver.goto(task.start_url)
    except StepFailed as failed:
        outcome.start_problem = failed.detail
        driver._log(0, "start", failed.status, began, failed.detail)
        return
    outcome.started = True
    driver._log(0, "start", "ok", began, None)
    if agent is not None:
        await agent(driver)
        return
    steps = task.steps or []
    for number, step in enumerate(steps, start=1):
        try:
            await driver.run_step(number, step, len(steps))
        except StepFailed:
            # A step cut short by the task's time limit or by a cap (its browser killed) is theirs.
            if outcome.status == "completed":
                outcome.status = "timed_out" if driver.remaining_ms() <= 0 else "step_failed"
            return
