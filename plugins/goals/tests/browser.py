"""A small synchronous driver for headless Chromium over the Chrome DevTools Protocol."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

CHROMIUM = "/usr/bin/chromium"
START_TIMEOUT_S = 30.0
WAIT_TIMEOUT_S = 15.0
_ACTIVE_PORT = re.compile(r"(\d+)\s+(/devtools/browser/[0-9a-f-]{36})\b")


class BrowserError(RuntimeError):
    """The browser did not start, answer or load in time, or a command failed."""


def missing_chromium(path: str = CHROMIUM) -> str | None:
    """None when Chromium is installed, else the sentence to fail the browser tests with."""
    if os.access(path, os.X_OK):
        return None
    return f"{path} is missing: run scripts/ensure-chromium.sh (installs Debian's chromium) before these tests"


class Browser:
    """One headless Chromium with one page; every wait has a timeout.

    Use as a context manager: `with Browser() as b: b.navigate(url); b.text_of("#x")`.
    `status` is the HTTP status of the document the last navigation or click loaded.
    """

    def __init__(self, executable: str = CHROMIUM, *, width: int = 900, height: int = 760) -> None:
        self.status: int | None = None
        self._loop = asyncio.new_event_loop()
        self._dir = tempfile.mkdtemp(prefix="tollway-chromium-")
        self._stderr = open(os.path.join(self._dir, "stderr.log"), "wb")
        self._process: subprocess.Popen[bytes] | None = None
        self._ws: ClientConnection | None = None
        self._session = ""
        self._frame = ""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        try:
            self._process = subprocess.Popen(
                [
                    executable,
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--no-default-browser-check",
                    "--disable-extensions",
                    "--remote-debugging-port=0",
                    f"--user-data-dir={self._dir}",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                start_new_session=True,
            )
            self._run(self._open(self._devtools_url(), width, height), timeout=START_TIMEOUT_S)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _run(self, coro: Any, timeout: float = WAIT_TIMEOUT_S) -> Any:
        async def bounded() -> Any:
            async with asyncio.timeout(timeout):
                return await coro

        try:
            return self._loop.run_until_complete(bounded())
        except TimeoutError as exc:
            raise BrowserError(f"no answer from Chromium within {timeout:g}s") from exc
        except ConnectionClosed as exc:
            raise BrowserError(f"the DevTools connection closed: {self._stderr_tail()}") from exc

    def _devtools_url(self) -> str:
        active = Path(self._dir) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise BrowserError(f"Chromium exited with {self._process.returncode}: {self._stderr_tail()}")
            written = _ACTIVE_PORT.match(active.read_text()) if active.exists() else None
            if written:
                return f"ws://127.0.0.1:{written[1]}{written[2]}"
            time.sleep(0.05)
        raise BrowserError(f"Chromium did not open its DevTools port: {self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        self._stderr.flush()
        return Path(self._stderr.name).read_bytes()[-2000:].decode(errors="replace")

    async def _open(self, url: str, width: int, height: int) -> None:
        self._ws = await connect(url, max_size=None, ping_interval=None, open_timeout=START_TIMEOUT_S)
        target = await self._call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = await self._call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False
        )
        self._session = attached["sessionId"]
        await self._call("Page.enable")
        self._frame = (await self._call("Page.getFrameTree"))["frameTree"]["frame"]["id"]
        await self._call("Network.enable")
        await self._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    async def _receive(self) -> dict[str, Any]:
        assert self._ws is not None
        return json.loads(await self._ws.recv())

    def _keep(self, message: dict[str, Any]) -> None:
        if "method" in message and message.get("sessionId") == self._session:
            self._events.append(message)

    async def _call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        assert self._ws is not None
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        await self._ws.send(json.dumps(message))
        while True:
            reply = await self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._keep(reply)

    async def _event(self, method: str, after: int) -> tuple[int, dict[str, Any]]:
        """The first `method` event at index `after` or later in the event log, reading on."""
        index = after
        while True:
            while index < len(self._events):
                if self._events[index]["method"] == method:
                    return index, self._events[index]["params"]
                index += 1
            reply = await self._receive()
            self._keep(reply)

    async def _document_loaded(self) -> int | None:
        """Waits for the next load of the page; the HTTP status of its document, if it had one."""
        index, _ = await self._event("Page.loadEventFired", 0)
        statuses = [
            e["params"]["response"].get("status")
            for e in self._events[:index]
            if e["method"] == "Network.responseReceived"
            and e["params"].get("type") == "Document"
            and e["params"].get("frameId") == self._frame
        ]
        return statuses[-1] if statuses else None

    def navigate(self, url: str) -> int | None:
        """Opens `url` and waits until it has loaded; the document's HTTP status."""

        async def go() -> int | None:
            self._events.clear()
            result = await self._call("Page.navigate", {"url": url})
            if result.get("errorText"):
                raise BrowserError(f"navigation to {url} failed: {result['errorText']}")
            return await self._document_loaded()

        self.status = self._run(go())
        return self.status

    def evaluate(self, expression: str) -> Any:
        """The JSON value of `expression` evaluated in the page (promises awaited)."""

        async def go() -> Any:
            result = await self._call(
                "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
            )
            if "exceptionDetails" in result:
                raise BrowserError(f"{expression!r} threw: {result['exceptionDetails'].get('exception', {})}")
            return result["result"].get("value")

        return self._run(go())

    def text_of(self, selector: str) -> str | None:
        """The text content of the first element matching `selector`, None when there is none."""
        return self.evaluate(f"document.querySelector({json.dumps(selector)})?.textContent ?? null")

    def attribute_of(self, selector: str, name: str) -> str | None:
        """An attribute of the first element matching `selector`."""
        return self.evaluate(
            f"document.querySelector({json.dumps(selector)})?.getAttribute({json.dumps(name)}) ?? null"
        )

    def click(self, selector: str) -> int | None:
        """Clicks the first element matching `selector` and waits for the page it loads."""

        async def go() -> int | None:
            self._events.clear()
            script = (
                f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e?.click(); return !!e; }})()"
            )
            found = await self._call("Runtime.evaluate", {"expression": script, "returnByValue": True})
            if not found.get("result", {}).get("value"):
                raise BrowserError(f"nothing matches {selector!r}")
            return await self._document_loaded()

        self.status = self._run(go())
        return self.status

    def set_page_scripts(self, enabled: bool) -> None:
        """Lets the pages run their own scripts or not; `evaluate` and `click` work either way."""
        self._run(self._call("Emulation.setScriptExecutionDisabled", {"value": not enabled}))

    def screenshot(self, path: str | os.PathLike[str]) -> Path:
        """Writes a PNG of the whole page to `path` (its folder is created)."""
        result = self._run(self._call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}))
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(result["data"]))
        return out

    @staticmethod
    def _end(process: subprocess.Popen[bytes]) -> None:
        """Ends the browser, then whatever is left of its process group (its own children)."""
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        """Closes the connection, ends the browser and removes its profile."""
        if self._ws is not None:
            ws, self._ws = self._ws, None
            try:
                self._run(ws.close(), timeout=3)
            except (BrowserError, OSError):
                pass
        if self._process is not None:
            process, self._process = self._process, None
            self._end(process)
        if not self._loop.is_closed():
            self._loop.close()
        self._stderr.close()
        shutil.rmtree(self._dir, ignore_errors=True)
