"""Where a webhook may be sent: the URL rules checked when a target is set, and the
address check made at send time, whose checked address is the one connected to.

A URL is checked twice. `target_problem` is a syntax check for the moment a
client sets a webhook URL: `https://` only, no user name or password, a host,
and an IP literal or a `localhost` name must be public. At send time `pin`
resolves the host once and refuses unless every address it resolves to is
public; the request then goes to that very address (see `PinnedTarget`), so a
name that resolves to a public address at the check and to an internal one a
moment later (DNS rebinding) cannot steer the request inside. With
`allow_insecure` (tests and local development) `http://` and loopback or
private-network targets are allowed too; link-local, multicast and unspecified
addresses never are.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
from collections.abc import Awaitable, Callable

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT


class TargetRefused(Exception):
    """The target may not be sent to; `permanent` when no later attempt can pass
    (the URL itself is refused), not when the host resolved to a refused address."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


def _embedded_v4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), if any."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_problem(ip: IPAddress, *, allow_insecure: bool) -> str | None:
    """Why `ip` may not be a webhook target, or None."""
    inner = _embedded_v4(ip)
    if inner is not None:
        return address_problem(inner, allow_insecure=allow_insecure)
    refused = f"{ip} is not a public address"
    if ip.is_unspecified or ip.is_multicast or ip.is_link_local:
        return refused
    if allow_insecure and ip.is_loopback:
        return None
    if ip.is_reserved:
        return refused
    if allow_insecure and (ip.is_private or ip in _SHARED):
        return None
    if not ip.is_global or ip.is_loopback or ip.is_private:
        return refused
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _is_localhost_name(host: str) -> bool:
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


MAX_URL_LENGTH = 2048


def target_problem(url: str, *, allow_insecure: bool) -> str | None:
    """Why `url` may not be a webhook target, or None (no network: a syntax check)."""
    if len(url) > MAX_URL_LENGTH:
        return f"must be at most {MAX_URL_LENGTH} characters"
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return "not a valid URL"
    allowed = ("https", "http") if allow_insecure else ("https",)
    if parsed.scheme not in allowed:
        return "must be an https:// URL"
    if parsed.userinfo:
        return "must not carry a user name or password"
    host = parsed.host
    if not host:
        return "has no host"
    ip = _literal(host)
    if ip is not None:
        return address_problem(ip, allow_insecure=allow_insecure)
    if _is_localhost_name(host) and not allow_insecure:
        return f"{host} is not a public host"
    return None


async def system_resolve(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver, in its order of preference."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]).split("%", 1)[0] for info in infos]


@dataclasses.dataclass(frozen=True)
class PinnedTarget:
    """A checked target: connect to one of `addresses` (in order), asking for
    `host_header`, with TLS verified for `sni_hostname` (None for an IP literal)."""

    url: httpx.URL
    addresses: tuple[str, ...]
    host_header: str | None
    sni_hostname: str | None

    def url_for(self, address: str) -> httpx.URL:
        return self.url if self.host_header is None else self.url.copy_with(host=address)

    def extensions(self) -> dict[str, str]:
        return {"sni_hostname": self.sni_hostname} if self.sni_hostname else {}


async def pin(url: str, *, allow_insecure: bool, resolve: Resolver = system_resolve) -> PinnedTarget:
    """Check `url` and the addresses its host resolves to; raise `TargetRefused`
    unless every one of them may be sent to."""
    problem = target_problem(url, allow_insecure=allow_insecure)
    if problem is not None:
        raise TargetRefused(problem, permanent=True)
    parsed = httpx.URL(url)
    if _literal(parsed.host) is not None:
        return PinnedTarget(parsed, (parsed.host,), None, None)
    host = parsed.raw_host.decode("ascii")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        found = list(dict.fromkeys(await resolve(host, port)))
    except (OSError, UnicodeError) as exc:
        raise TargetRefused(f"could not resolve {host}: {exc}", permanent=False) from None
    if not found:
        raise TargetRefused(f"{host} resolves to no address", permanent=False)
    for address in found:
        ip = _literal(address)
        problem = "not an IP address" if ip is None else address_problem(ip, allow_insecure=allow_insecure)
        if problem is not None:
            raise TargetRefused(f"{host} resolves to {address}: {problem}", permanent=False)
    host_header = host if parsed.port is None else f"{host}:{parsed.port}"
    sni = host if parsed.scheme == "https" else None
    return PinnedTarget(parsed, tuple(found), host_header, sni)
