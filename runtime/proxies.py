"""Which peers may say who the client is: `TOLLWAY_TRUSTED_PROXIES` (docs/deploy.md,
"Behind a reverse proxy").

Behind a reverse proxy every connection comes from the proxy, so the rate limiter's
per-IP counter (core/calls/rate_identity.py) would count every anonymous caller as
one. uvicorn's proxy-headers middleware rewrites the ASGI scope's client address
(from `X-Forwarded-For`) and scheme (from `X-Forwarded-Proto`) for a request whose
peer is trusted; everything downstream reads the scope. uvicorn's own default
trusts 127.0.0.1 and ::1 (or its `FORWARDED_ALLOW_IPS` variable); Tollway without
this setting trusts no peer, so that no process on the machine can pick the address
it is counted by, and a proxy is trusted only once the operator names it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

TRUSTED_PROXIES_ENV = "TOLLWAY_TRUSTED_PROXIES"


def parse_trusted_proxies(env: Mapping[str, str]) -> tuple[str, ...]:
    """The proxies of `TOLLWAY_TRUSTED_PROXIES`: comma-separated IP addresses and CIDR
    networks (`10.0.0.5`, `10.0.0.0/8`, `::1`), each as a network; empty: none. Anything
    else (a host name, `*`, a network with host bits set) is refused, where uvicorn
    would silently compare it as text and trust nobody."""
    found: list[str] = []
    for item in (env.get(TRUSTED_PROXIES_ENV) or "").split(","):
        text = item.strip()
        if not text:
            continue
        try:
            net = ipaddress.ip_network(text)
        except ValueError:
            raise ValueError(
                f"{TRUSTED_PROXIES_ENV} must be comma-separated IP addresses or CIDR networks, not {text!r}"
            ) from None
        found.append(str(net))
    return tuple(found)


def uvicorn_proxy_options(trusted: tuple[str, ...]) -> dict[str, Any]:
    """uvicorn's options for `trusted` (Config/run keywords): its proxy headers honoured
    from those peers only, and from none when there are none (never its loopback default)."""
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": list(trusted)}


__all__ = ["TRUSTED_PROXIES_ENV", "parse_trusted_proxies", "uvicorn_proxy_options"]
