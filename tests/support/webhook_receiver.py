"""A webhook receiver for tests: a real HTTP/1.1 server on 127.0.0.1 (plain or TLS)
that records every connection and request and answers from a script.

`statuses` is the list of status codes to answer, one per request, the last
repeated; `location` goes into 3xx answers. The first `hold` requests wait until
`release()` before being answered (a sender killed or stalled mid-send). With an
`ssl_context` it speaks TLS and records the name each client asked for (SNI).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ssl
import time
from collections.abc import AsyncIterator


@dataclasses.dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float  # time.monotonic() when the request was read


class Receiver:
    def __init__(
        self,
        statuses: list[int] | None = None,
        *,
        location: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.statuses = list(statuses or [200])
        self.location = location
        self.ssl_context = ssl_context
        self.requests: list[Received] = []
        self.connections = 0
        self.server_names: list[str | None] = []
        self.hold = 0
        self._released = asyncio.Event()
        self._server: asyncio.Server | None = None
        self.port = 0
        if ssl_context is not None:
            ssl_context.sni_callback = self._sni

    def _sni(self, _sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        self.server_names.append(name)

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}/hook"

    def release(self) -> None:
        self._released.set()

    def ids(self) -> list[str]:
        return [r.headers["webhook-id"] for r in self.requests]

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.release()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    def _status_for(self, index: int) -> int:
        return self.statuses[min(index, len(self.statuses) - 1)]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, path, _version = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while h := (await reader.readline()).decode("latin-1").rstrip("\r\n"):
                    name, _, value = h.partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                index = len(self.requests)
                self.requests.append(Received(method, path, headers, body, time.monotonic()))
                if index < self.hold:
                    await self._released.wait()
                status = self._status_for(index)
                extra = f"location: {self.location}\r\n" if self.location and 300 <= status < 400 else ""
                writer.write(f"HTTP/1.1 {status} X\r\ncontent-length: 2\r\n{extra}\r\nok".encode())
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, ssl.SSLError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()


@contextlib.asynccontextmanager
async def receiving(statuses: list[int] | None = None, **options: object) -> AsyncIterator[Receiver]:
    receiver = Receiver(statuses, **options)  # type: ignore[arg-type]
    await receiver.start()
    try:
        yield receiver
    finally:
        await receiver.stop()
