"""Fetching one page for `web_read`: address checks, redirects, size cap.

Uses only the `httpx.AsyncClient` it is handed (the kernel's `ctx.http`) and never
lets it follow redirects by itself: every hop's host is resolved here, checked
against the private-address rule, and the connection is pinned to the address
that was checked (so a DNS answer cannot change between the check and the
connect). Every failure becomes a `ToolError` with the failure codes of docs/api.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import httpx

from tollway import ToolError
from tollway.helpers import is_public_address

MAX_REDIRECTS = 5
MAX_BODY_BYTES = 5 * 1024 * 1024
# One hop: connect, then each read. The whole fetch (every hop, every address
# tried, the body) has its own deadline, below the tool's 60 s time limit so the
# extraction still has time.
REQUEST_TIMEOUT = httpx.Timeout(15.0, connect=10.0)
RESOLVE_TIMEOUT_S = 10.0
FETCH_DEADLINE_S = 40.0
USER_AGENT = "Mozilla/5.0 (compatible; TollwayWebRead/0.1)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,text/*;q=0.8,*/*;q=0.1"
_REDIRECTS = {301, 302, 303, 307, 308}


@dataclasses.dataclass(frozen=True)
class Page:
    """What the target answered, at the end of any redirects."""

    url: str  # the final URL as the caller would write it (never the pinned address)
    status: int
    content_type: str | None  # media type, lower case, without parameters
    charset: str | None
    body: bytes  # decoded from any Content-Encoding, at most MAX_BODY_BYTES
    capped: bool  # the body was longer than MAX_BODY_BYTES and was cut


def unreachable(message: str, reason: str, status: int, **details: Any) -> ToolError:
    return ToolError("target_unreachable", message, status=status, details={"reason": reason, **details})


def unsupported(message: str, reason: str, **details: Any) -> ToolError:
    return ToolError("source_unsupported", message, status=422, details={"reason": reason, **details})


# -- addresses ------------------------------------------------------------------------
# The public-address rule is shared with the browser's filtering proxy (tollway.helpers).
is_public = is_public_address


Resolver = Callable[[str, int], Any]


async def _system_resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [info[4][0] for info in infos]


# Tests replace this to give a made-up public name an address without DNS.
resolve: Resolver = _system_resolve


async def addresses_for(url: httpx.URL, *, allow_private: bool) -> list[str]:
    """The host's addresses in resolver order, without duplicates; refuses private ones."""
    host = url.raw_host.decode("ascii")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        found = await asyncio.wait_for(resolve(host, port), RESOLVE_TIMEOUT_S)
    except (socket.gaierror, UnicodeError) as exc:
        raise unreachable(f"The host {host!r} could not be resolved.", "dns", 400, host=host) from exc
    except (TimeoutError, OSError) as exc:
        raise unreachable(f"The host {host!r} could not be resolved in time.", "dns", 400, host=host) from exc
    ordered: list[str] = []
    for address in found:
        address = address.split("%", 1)[0]  # an IPv6 zone id
        if address not in ordered:
            ordered.append(address)
    if not ordered:
        raise unreachable(f"The host {host!r} has no address.", "dns", 400, host=host)
    if not allow_private:
        # Every address must be public, not just the first: a name with one
        # public and one private address could otherwise reach the private one.
        if not all(is_public(ipaddress.ip_address(a)) for a in ordered):
            raise unreachable(
                f"The host {host!r} resolves to a private or reserved address; this service reads public web pages only.",
                "private_address",
                400,
                host=host,
            )
    return ordered


# -- one hop -----------------------------------------------------------------------------
def _pinned_request(http: httpx.AsyncClient, url: httpx.URL, address: str) -> httpx.Request:
    """GET `url`, connecting to `address` while naming the real host (Host header, TLS SNI)."""
    extensions: dict[str, Any] = {}
    if url.scheme == "https":
        # httpcore checks the certificate against the SNI name, not the address.
        extensions["sni_hostname"] = url.raw_host.decode("ascii")
    return http.build_request(
        "GET",
        url.copy_with(host=address, fragment=None),
        headers={"Host": url.netloc.decode("ascii"), "User-Agent": USER_AGENT, "Accept": ACCEPT},
        timeout=REQUEST_TIMEOUT,
        extensions=extensions,
    )


def _forget_cookies(http: httpx.AsyncClient, address: str) -> None:
    """Keep nothing the target set: the kernel's client is shared by every call."""
    jar = http.cookies.jar
    for cookie in list(jar):
        if cookie.domain in (address, f"[{address}]", f"{address}.local"):
            jar.clear(cookie.domain, cookie.path, cookie.name)


def _connection_error(exc: httpx.HTTPError, host: str) -> ToolError:
    if isinstance(exc, httpx.TimeoutException):
        return unreachable(f"{host} did not answer in time.", "timeout", 504, host=host)
    if isinstance(exc, httpx.ConnectError):
        return unreachable(f"{host} could not be connected to.", "connect_failed", 502, host=host)
    if isinstance(exc, httpx.DecodingError):
        return unsupported(f"{host} sent a body that could not be decoded.", "undecodable_body", host=host)
    return unreachable(f"{host} broke off the exchange.", "protocol_error", 502, host=host)


async def _open(http: httpx.AsyncClient, url: httpx.URL, addresses: list[str]) -> tuple[httpx.Response, str]:
    """Send to each address in turn until one connects; the response is streamed."""
    host = url.host
    last: httpx.HTTPError | None = None
    for address in addresses:
        try:
            response = await http.send(_pinned_request(http, url, address), stream=True, follow_redirects=False)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            last = exc  # nothing was sent: the next address may work
            continue
        except httpx.HTTPError as exc:
            raise _connection_error(exc, host) from exc
        return response, address
    assert last is not None
    raise _connection_error(last, host) from last


def _media_type(response: httpx.Response) -> str | None:
    raw = response.headers.get("content-type")
    if not raw:
        return None
    media = raw.split(";", 1)[0].strip().lower()
    return media or None


async def _read_capped(response: httpx.Response, host: str) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            room = MAX_BODY_BYTES - size
            if len(chunk) > room:
                chunks.append(chunk[:room])
                return b"".join(chunks), True
            chunks.append(chunk)
            size += len(chunk)
    except httpx.HTTPError as exc:
        raise _connection_error(exc, host) from exc
    return b"".join(chunks), False


def _redirect_target(url: httpx.URL, location: str) -> httpx.URL:
    try:
        target = url.join(location.strip())
    except httpx.InvalidURL as exc:
        raise unsupported("The page redirected to an address that is not a valid URL.", "bad_redirect") from exc
    if target.scheme not in ("http", "https") or not target.raw_host:
        raise unsupported("The page redirected to an address that is not an http(s) URL.", "bad_redirect")
    if not target.fragment and url.fragment:
        target = target.copy_with(fragment=url.fragment)  # RFC 9110 §10.2.2
    return target


async def _fetch(
    http: httpx.AsyncClient, url: httpx.URL, *, allow_private: bool, accept: Callable[[str | None], bool]
) -> Page:
    for _hop in range(MAX_REDIRECTS + 1):
        addresses = await addresses_for(url, allow_private=allow_private)
        response, address = await _open(http, url, addresses)
        try:
            _forget_cookies(http, address)
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                url = _redirect_target(url, location)
                continue
            media = _media_type(response)
            if not accept(media):
                # Refused before reading: a PDF or a video is never downloaded.
                raise unsupported(
                    f"The page is {media}, not HTML or text.",
                    "content_type",
                    content_type=media,
                    upstream_status=response.status_code,
                )
            body, capped = await _read_capped(response, url.host)
            return Page(
                url=str(url),
                status=response.status_code,
                content_type=media,
                charset=response.charset_encoding,
                body=body,
                capped=capped,
            )
        finally:
            await response.aclose()
    raise unsupported(f"The page redirected more than {MAX_REDIRECTS} times.", "too_many_redirects")


async def fetch_page(
    http: httpx.AsyncClient, url: str, *, allow_private: bool, accept: Callable[[str | None], bool]
) -> Page:
    """GET `url` following at most MAX_REDIRECTS redirects, within FETCH_DEADLINE_S.

    `accept(media_type)` says whether a content type is worth reading (None when
    the target sent none); anything else is refused before its body is read.
    """
    target = httpx.URL(url)
    try:
        async with asyncio.timeout(FETCH_DEADLINE_S):
            return await _fetch(http, target, allow_private=allow_private, accept=accept)
    except TimeoutError as exc:
        raise unreachable(f"{target.host} did not answer in time.", "timeout", 504, host=target.host) from exc
