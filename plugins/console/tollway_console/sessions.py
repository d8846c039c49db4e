"""Signing the operator in and keeping the session: the operator token, given once on the
sign-in form and compared in constant time by the kernel, is exchanged for a random session
cookie (HttpOnly, SameSite=Strict, Secure when the page is served over https) whose SHA-256
alone is stored, with its expiry; every form carries a CSRF token derived from the session
(HMAC-SHA256 of a fixed label under the cookie's value), so a page of another origin can
neither read nor forge it. The sign-in form, before there is a session, is protected the
same way by a short-lived cookie of its own (double submit)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from http.cookies import CookieError, SimpleCookie

from tollway import RouteCall, now_ms

from .tables import ConsoleSession

SESSION_COOKIE = "tollway_console"
SIGN_IN_COOKIE = "tollway_console_sign_in"
SESSION_TTL_S = 12 * 3600  # a working day; then the operator signs in again
SIGN_IN_TTL_S = 600  # the sign-in form's own token
_CSRF_LABEL = b"tollway console csrf"


def cookies(call: RouteCall) -> dict[str, str]:
    raw = call.request.header("cookie") or ""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def secure(call: RouteCall) -> bool:
    """Served over https (the request's scheme, as the trusted proxy headers leave it)."""
    return call.request.url.startswith("https://")


def set_cookie(call: RouteCall, name: str, value: str, max_age: int) -> str:
    flags = "; Secure" if secure(call) else ""
    return f"{name}={value}; Path=/console; Max-Age={max_age}; HttpOnly; SameSite=Strict{flags}"


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def csrf_for(secret: str) -> str:
    return hmac.new(secret.encode(), _CSRF_LABEL, hashlib.sha256).hexdigest()


def csrf_ok(secret: str, given: str) -> bool:
    return bool(given) and hmac.compare_digest(csrf_for(secret).encode(), given.encode())


async def start() -> str:
    """A new session; its cookie value (never stored as it is)."""
    now = now_ms()
    await ConsoleSession.delete().where(ConsoleSession.expires_ms < now)  # expired ones go at each sign-in
    token = secrets.token_urlsafe(32)
    await ConsoleSession.insert(ConsoleSession(id=_hash(token), created_ms=now, expires_ms=now + SESSION_TTL_S * 1000))
    return token


async def current(call: RouteCall) -> str | None:
    """The session cookie's value when it names a live session, else None."""
    token = cookies(call).get(SESSION_COOKIE)
    if not token or len(token) > 100:
        return None
    row = await (
        ConsoleSession.select(ConsoleSession.id)
        .where((ConsoleSession.id == _hash(token)) & (ConsoleSession.expires_ms > now_ms()))
        .first()
    )
    return token if row is not None else None


async def end(token: str) -> None:
    await ConsoleSession.delete().where(ConsoleSession.id == _hash(token))
