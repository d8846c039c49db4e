"""Opens and clicks of what the email tool sends: the HTML part gets a tracking pixel and its
links are rewritten to signed redirects served by Tollway; each open or click is counted on
the sent email. A link's token is `<request id>.<link number>.<HMAC>`, so nobody can point a
redirect anywhere the message did not link to. With TOLLWAY_EMAIL_TRACKING_URL set they are
served on that host alone, which serves nothing else, so the service's own host name never
redirects to where an agent's message linked."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from html import unescape
from typing import Any

from tollway import Page, Route, RouteCall, Setting, now_ms

from .tables import EmailKey, SentEmail

PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")  # a 1x1 transparent GIF
_HREF = re.compile(r'(<a\b[^>]*?\bhref\s*=\s*)(["\'])(https?://[^"\']+)\2', re.I)
NO_STORE = {"Cache-Control": "no-store, private"}
TRACKING_URL = Setting(
    "email",
    "tracking_url",
    None,
    (
        "The base URL of the tracking pixel and links, on a host name of its own (e.g. https://t.example.com); when set, that "
        "host serves them and nothing else, and the API's host refuses them. Unset: they are served under public_url."
    ),
)


async def _tracking_key() -> dict[str, Any] | None:
    return await EmailKey.select(EmailKey.value).where(EmailKey.name == "tracking").first()


async def key() -> bytes:
    found = await _tracking_key()
    if found is None:
        made = EmailKey(name="tracking", value=base64.b64encode(secrets.token_bytes(32)).decode())
        await EmailKey.insert(made).on_conflict(target=EmailKey.name, action="DO NOTHING")
        found = await _tracking_key()
    return base64.b64decode(found["value"])


async def _count(request_id: str, column: Any) -> None:
    """One more open or click of a sent email."""
    await SentEmail.update({column: column + 1, SentEmail.updated_ms: now_ms()}).where(
        SentEmail.request_id == request_id
    )


def base_url(setting: str) -> str:
    """The base of tracking links from a setting's value: https:// when it names a bare host."""
    setting = setting.strip().rstrip("/")
    return setting if "://" in setting or not setting else f"https://{setting}"


def token(secret: bytes, request_id: str, number: int) -> str:
    mac = hmac.new(secret, f"{request_id}.{number}".encode(), hashlib.sha256).digest()[:16]
    return f"{request_id}.{number}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def read_token(secret: bytes, text: str) -> tuple[str, int] | None:
    parts = text.split(".")
    if len(parts) != 3 or not parts[1].isdigit() or len(text) > 120:
        return None
    if not hmac.compare_digest(token(secret, parts[0], int(parts[1])), text):
        return None
    return parts[0], int(parts[1])


def instrument(
    html: str, *, secret: bytes, request_id: str, base_url: str, opens: bool, clicks: bool
) -> tuple[str, list[str]]:
    """The HTML with its links rewritten (number 1, 2, …) and the pixel (number 0) added; the original links."""
    links: list[str] = []

    def swap(match: re.Match[str]) -> str:
        links.append(unescape(match.group(3)))  # the attribute's text: &amp; is &
        return (
            f"{match.group(1)}{match.group(2)}{base_url}/v1/t/c/{token(secret, request_id, len(links))}{match.group(2)}"
        )

    if clicks:
        html = _HREF.sub(swap, html)
    if opens:
        pixel = f'<img src="{base_url}/v1/t/o/{token(secret, request_id, 0)}" width="1" height="1" alt="" style="display:none">'
        html = html.replace("</body>", pixel + "</body>") if "</body>" in html else html + pixel
    return html, links


async def opened(call: RouteCall) -> Page:
    found = read_token(await key(), call.params["token"])
    if found is not None and found[1] == 0:
        await _count(found[0], SentEmail.opens)
    return Page(PIXEL, media_type="image/gif", headers=NO_STORE)


async def clicked(call: RouteCall) -> Page:
    found = read_token(await key(), call.params["token"])
    if found is not None and found[1] > 0:
        sent = await SentEmail.select(SentEmail.links).where(SentEmail.request_id == found[0]).first()
        links = json.loads(sent["links"]) if sent else []
        if found[1] <= len(links):
            await _count(found[0], SentEmail.clicks)
            return Page(b"", status=302, headers={"Location": links[found[1] - 1], **NO_STORE}, media_type="text/plain")
    return Page("<p>This link is not valid.</p>", status=404, headers=NO_STORE)


TRACKING_ROUTES = (
    Route(
        method="GET",
        path="/v1/t/o/{token}",
        name="email_open_pixel",
        title="Email open",
        description="The tracking pixel of a sent email (counts an open).",
        handle=opened,
        auth="public",
        rate_limit=None,
        page=True,
        media_type="image/gif",
        tags=("email tracking",),
        statuses=(),
        host=TRACKING_URL,
    ),
    Route(
        method="GET",
        path="/v1/t/c/{token}",
        name="email_click",
        title="Email link",
        description="A tracked link of a sent email: counts the click, then redirects to where the email linked.",
        handle=clicked,
        auth="public",
        rate_limit=None,
        page=True,
        tags=("email tracking",),
        statuses=(404,),
        host=TRACKING_URL,
    ),
)
