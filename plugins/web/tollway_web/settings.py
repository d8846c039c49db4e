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
        "screenshot_url is null (web read renders no page; browser_task does)."
    ),
)
RESEARCH_QUICK_SEARCH_S = Setting(
    family=FAMILY,
    name="research_quick_search_s",
    default="150",
    description=(
        "Seconds quick research may plan, search and read (searching further until it has read 8 sources) "
        "before it writes with what it has; fewer than 5 readable sources by then fails the job, refunded."
    ),
)
RESEARCH_DEEP_SEARCH_S = Setting(
    family=FAMILY,
    name="research_deep_search_s",
    default="480",
    description=(
        "Seconds deep research may plan, search and read (searching further until it has read 24 sources) "
        "before it writes with what it has; fewer than 20 readable sources by then fails the job, refunded. "
        "At most 540 (the job's 660 s limit leaves 120 s for writing)."
    ),
)
SETTINGS = (ALLOW_PRIVATE_ADDRESSES, SCREENSHOT_URL_TEMPLATE, RESEARCH_QUICK_SEARCH_S, RESEARCH_DEEP_SEARCH_S)

_TRUE = {"1", "true", "yes", "on"}


def allow_private_addresses(ctx: ToolContext) -> bool:
    return (ctx.setting(ALLOW_PRIVATE_ADDRESSES) or "").lower() in _TRUE


def screenshot_url(ctx: ToolContext, page_url: str) -> str | None:
    template = ctx.setting(SCREENSHOT_URL_TEMPLATE)
    if not template or "{url}" not in template:
        return None
    return template.replace("{url}", quote(page_url, safe=""))


MAX_RESEARCH_SEARCH_S = 540.0  # the research job's 660 s limit less 120 s for writing


def research_search_s(ctx: ToolContext, depth: str) -> float:
    """The research search time of `depth` in seconds, at most 540; a value that is not a
    positive number gives the default."""
    setting = RESEARCH_DEEP_SEARCH_S if depth == "deep" else RESEARCH_QUICK_SEARCH_S
    try:
        seconds = float(ctx.setting(setting) or "")
    except ValueError:
        seconds = 0.0
    return min(seconds, MAX_RESEARCH_SEARCH_S) if seconds > 0 else float(setting.default or 0)
