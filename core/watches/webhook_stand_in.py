"""STAND-IN, to be replaced when merging: the webhook target rule and secret maker
that core/webhooks/targets.py (`target_problem`) and core/webhooks/signing.py
(`new_secret`) provide. Same signatures; core/watches/requests.py and
core/watches/resource.py import them from here only, so the swap is two import lines
and deleting this file."""
from __future__ import annotations

import ipaddress
import secrets
from urllib.parse import urlsplit

MAX_URL_LENGTH = 2048


def _private_host(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not address.is_global


def target_problem(url: str, *, allow_insecure: bool) -> str | None:
    """Why `url` cannot receive webhooks, or None: https to a public host (http and
    loopback or private hosts too with `allow_insecure`), no credentials in it."""
    if len(url) > MAX_URL_LENGTH:
        return f"must be at most {MAX_URL_LENGTH} characters"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port that is not a number in range
    except ValueError:
        return "is not a URL"
    del port
    allowed = ("https", "http") if allow_insecure else ("https",)
    if parts.scheme not in allowed:
        return "must be an https:// URL"
    host = (parts.hostname or "").lower()
    if not host:
        return "must name a host"
    if parts.username is not None or parts.password is not None:
        return "must not carry a user name or password"
    if not allow_insecure and _private_host(host):
        return "must point at a public address"
    return None


def new_secret() -> str:
    """A webhook signing secret: `whsec_` + 32 random bytes, base64url."""
    return "whsec_" + secrets.token_urlsafe(32)
