"""The plugin's settings (`TOLLWAY_WEB_*`) and how a run reads them."""
from __future__ import annotations

from urllib.parse import quote

from tollway import Setting, ToolContext

FAMILY = "web"

ALLOW_PRIVATE_ADDRESSES = Setting(
    family=FAMILY,
    name="allow_private_addresses",
    default="false",
    description=(
        "Let web_read fetch hosts that resolve to loopback, private, link-local or other "
        "non-public addresses (true/false). Leave false on a public service: it stops callers "
        "reading the operator's own network. Tests and private deployments set it true."
    ),
)
SCREENSHOT_URL_TEMPLATE = Setting(
    family=FAMILY,
    name="screenshot_url_template",
    default=None,
    description=(
        "URL of an external screenshot service with `{url}` where the page's final URL goes "
        "(percent-encoded), e.g. https://shots.example/render?url={url}. It is served to callers "
        "as `screenshot_url` without being fetched, so it must carry no secret. Unset: "
        "screenshot_url is null (no browser runs in Tollway)."
    ),
)
SETTINGS = (ALLOW_PRIVATE_ADDRESSES, SCREENSHOT_URL_TEMPLATE)

_TRUE = {"1", "true", "yes", "on"}


def allow_private_addresses(ctx: ToolContext) -> bool:
    return (ctx.setting(ALLOW_PRIVATE_ADDRESSES) or "").lower() in _TRUE


def screenshot_url(ctx: ToolContext, page_url: str) -> str | None:
    template = ctx.setting(SCREENSHOT_URL_TEMPLATE)
    if not template or "{url}" not in template:
        return None
    return template.replace("{url}", quote(page_url, safe=""))
