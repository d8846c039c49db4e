"""The plugin's settings (`TOLLWAY_WEB_*`) and how a run reads them."""
from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import quote

from tollway import Setting

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


def _get(settings: Mapping[str, str], setting: Setting) -> str | None:
    """By setting name, then variable name, then the environment (as every plugin reads them)."""
    for value in (settings.get(setting.name), settings.get(setting.env_var), os.environ.get(setting.env_var)):
        if value is not None and value.strip():
            return value.strip()
    return setting.default


def allow_private_addresses(settings: Mapping[str, str]) -> bool:
    return (_get(settings, ALLOW_PRIVATE_ADDRESSES) or "").lower() in _TRUE


def screenshot_url(settings: Mapping[str, str], page_url: str) -> str | None:
    template = _get(settings, SCREENSHOT_URL_TEMPLATE)
    if not template or "{url}" not in template:
        return None
    return template.replace("{url}", quote(page_url, safe=""))
