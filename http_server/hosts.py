"""Routes on a host of their own (`Route.host`): the host name each is bound to, read from its
setting, and the middleware that answers 404 to a bound route asked for on another host and
to anything else asked for on a bound host. The request's Host header decides."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from litestar.exceptions import NotFoundException
from litestar.types import ASGIApp, Receive, Scope, Send

from tollway._core.plugin_api.settings_spec import setting_value

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

OPT = "tollway_host"  # a handler's `opt` key: the host name its route is bound to


def host_name(netloc: str) -> str:
    """The host name of a URL's netloc or a Host header, lower-cased, without port or final dot."""
    try:
        name = urlsplit("//" + netloc).hostname or ""
    except ValueError:  # a malformed port or bracket
        return ""
    return name.rstrip(".")


def bound_hosts(kernel: Kernel) -> dict[str, str]:
    """Route name -> the host name it is served on, for each route whose host setting is set."""
    out = {}
    for route in kernel.routes.values():
        if route.host is not None:
            url = setting_value(kernel.family_settings(route.host.family), route.host) or ""
            if name := host_name(urlsplit(url if "://" in url else "//" + url).netloc):  # a bare host name too
                out[route.name] = name
    return out


def asked_host(scope: Scope) -> str:
    """The host name the request's (first) Host header asks for; empty without one."""
    for name, value in scope["headers"]:
        if name.lower() == b"host":
            return host_name(value.decode("latin-1"))
    return ""


def host_gate(hosts: frozenset[str]) -> Callable[[ASGIApp], ASGIApp]:
    """The middleware keeping the bound `hosts` and every other host apart."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def gate(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] in ("http", "websocket"):
                handler = scope.get("route_handler")
                bound = handler.opt.get(OPT) if handler is not None else None
                asked = asked_host(scope)
                if (asked != bound) if bound is not None else (asked in hosts):
                    raise NotFoundException()
            await app(scope, receive, send)

        return gate

    return middleware


__all__ = ["OPT", "asked_host", "bound_hosts", "host_gate", "host_name"]
