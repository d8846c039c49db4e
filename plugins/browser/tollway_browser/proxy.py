"""The filtering forward proxy every request of a task's Chromium goes through.

Chromium is started with this proxy as its only way out (`--proxy-server`, loopback not
bypassed), so it never resolves a host itself: navigations, redirects, iframes, fetch/XHR,
WebSockets, service workers, prefetches and downloads all arrive here as an HTTP request or
a CONNECT tunnel. For each one the proxy resolves the host once, refuses unless every
address is public (web read's rule, `tollway.helpers.is_public_address`: no loopback,
private, link-local and metadata, multicast, reserved or unspecified address, nor an IPv6
form of one), then connects to the very address it checked — a DNS answer that changes
between the check and the use (rebinding) cannot steer the connection inside. The
operator's allow-list (`TOLLWAY_BROWSER_ALLOW_HOSTS`, exact host and port) is the one
exception. Plain HTTP is answered one request per connection (`Connection: close`), so a
kept-alive connection can never carry a second request to another host unchecked. Every
refusal is recorded for the task's result; no response passes past the size cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from tollway.helpers import is_public_address

Resolver = Callable[[str, int], Awaitable[list[str]]]
Connector = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]

RESOLVE_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
HEAD_LIMIT = 64 * 1024
CHUNK = 64 * 1024
BLOCKS = {"private_address", "scheme", "bad_request", "response_capped"}
_HOP_BY_HOP = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


async def system_resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]).split("%", 1)[0] for info in infos]


async def open_tcp(address: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.wait_for(asyncio.open_connection(address, port, limit=HEAD_LIMIT), CONNECT_TIMEOUT_S)


# How hosts are resolved and connected to. Tests replace them (a made-up name that resolves
# to loopback, an answer that changes between two lookups); the service never does.
resolve: Resolver = system_resolve
connect: Connector = open_tcp


class Refused(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def split_host_port(authority: str, default_port: int) -> tuple[str, int]:
    """`host:port`, `[v6]:port` or a bare host, as (host without brackets, lower case; port)."""
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "")
    if port and not port.isdigit():
        raise Refused("bad_request", f"{authority!r} has no valid port")
    return host.lower(), int(port) if port else default_port


class FilteringProxy:
    """One task's proxy on 127.0.0.1 (a port of its own): `await start()`, then `close()`."""

    def __init__(self, *, allow: frozenset[tuple[str, int]], max_response_bytes: int) -> None:
        self.allow = allow
        self.max_response_bytes = max_response_bytes
        self.blocked: list[dict[str, str]] = []  # {url, reason, detail}: every refused request
        self.passed = 0  # requests and tunnels let through
        self.port = 0
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._clients):
            task.cancel()
        if self._clients:
            await asyncio.gather(*self._clients, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    def _block(self, url: str, refused: Refused) -> None:
        """Record a refusal by the rules; a host that does not resolve or answer is no refusal."""
        if refused.reason in BLOCKS and len(self.blocked) < 500:
            self.blocked.append({"url": url, "reason": refused.reason, "detail": refused.detail})

    async def open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Check `host` (and what it resolves to) and connect to a checked address."""
        allowed = (host, port) in self.allow
        ip = _literal(host)
        if ip is not None:
            if not allowed and not is_public_address(ip):
                raise Refused("private_address", f"{ip} is not a public address")
            addresses = [str(ip)]
        else:
            try:
                found = await asyncio.wait_for(resolve(host, port), RESOLVE_TIMEOUT_S)
            except (OSError, UnicodeError, TimeoutError) as exc:
                raise Refused("dns", f"{host} could not be resolved ({type(exc).__name__})") from None
            addresses = list(dict.fromkeys(found))
            if not addresses:
                raise Refused("dns", f"{host} has no address")
            if not allowed:
                for address in addresses:
                    if not is_public_address(address):
                        raise Refused("private_address", f"{host} resolves to {address}, not a public address")
        last: Exception | None = None
        for address in addresses:  # the checked addresses only: never a second lookup
            try:
                return await connect(address, port)
            except (OSError, TimeoutError) as exc:
                last = exc
        raise Refused("connect_failed", f"{host}:{port} could not be connected to ({type(last).__name__})")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients.add(task)
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head[:-4].split(b"\r\n")
            parts = lines[0].decode("latin-1").split(" ")
            if len(parts) != 3:
                return await self._answer(writer, 400, "bad request")
            method, target, _version = parts
            if method == "CONNECT":
                label = target
                try:
                    host, port = split_host_port(target, 443)
                    up_reader, upstream = await self.open(host, port)
                except Refused as refused:
                    self._block(label, refused)
                    return await self._answer(writer, 403, refused.detail)
                self.passed += 1
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
                await self._relay(reader, writer, up_reader, upstream, label)
                return
            url = urlsplit(target)
            try:
                if url.scheme != "http" or not url.netloc:
                    raise Refused("scheme", f"{url.scheme or 'a relative'} URL cannot be fetched through the proxy")
                host, port = split_host_port(url.netloc.rpartition("@")[2], 80)
                up_reader, upstream = await self.open(host, port)
            except Refused as refused:
                self._block(target, refused)
                return await self._answer(writer, 403, refused.detail)
            self.passed += 1
            upgrade = any(line.lower().startswith(b"upgrade:") for line in lines[1:])
            kept = [line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_BY_HOP]
            kept.append(b"Connection: upgrade" if upgrade else b"Connection: close")
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            upstream.write(f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + b"\r\n".join(kept) + b"\r\n\r\n")
            await self._relay(reader, writer, up_reader, upstream, target)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()
            self._clients.discard(task)

    async def _answer(self, writer: asyncio.StreamWriter, status: int, detail: str) -> None:
        body = f"Refused by Tollway's browser proxy: {detail}\n".encode()
        reason = {400: "Bad Request", 403: "Forbidden"}[status]
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nX-Tollway-Blocked: 1\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    async def _relay(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        upstream: asyncio.StreamWriter,
        label: str,
    ) -> None:
        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, cap: int | None) -> None:
            sent = 0
            while chunk := await src.read(CHUNK):
                sent += len(chunk)
                if cap is not None and sent > cap:
                    self._block(label, Refused("response_capped", f"more than {cap} bytes"))
                    return
                dst.write(chunk)
                await dst.drain()

        jobs = [
            asyncio.ensure_future(pipe(reader, upstream, None)),
            asyncio.ensure_future(pipe(up_reader, writer, self.max_response_bytes)),
        ]
        try:
            await asyncio.wait(jobs, return_when=asyncio.FIRST_COMPLETED)  # either side closed: both end
        finally:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
