"""The website plugin's settings (`TOLLWAY_WEBSITE_*`) and how a run reads them."""

from __future__ import annotations

from tollway import Setting
from tollway_browser.settings import number, text  # how a run reads a setting, as the browser's

__all__ = ["FAMILY", "SETTINGS", "number", "text"]

FAMILY = "website"

PUBLIC_URL = Setting(
    FAMILY,
    "public_url",
    "http://127.0.0.1:8000",
    "This service's public base URL: sites are served at <URL>/sites/<slug>/, and their sitemap and the DNS "
    "records a custom domain needs are written from it.",
)
CHROMIUM_PATH = Setting(
    FAMILY,
    "chromium_path",
    "/usr/bin/chromium",
    "The Chromium executable the checks before publication run (never a Playwright download).",
)
CHECK_TIMEOUT_S = Setting(
    FAMILY,
    "check_timeout_s",
    "120",
    "The longest the checks of one build may take in Chromium, in seconds.",
)
DOMAIN_WARN_DAYS = Setting(
    FAMILY,
    "domain_warn_days",
    "30",
    "How many days before a site's domain registration lapses its owner gets a `domain_expiring` notification.",
)
DOMAIN_CHECK_S = Setting(
    FAMILY,
    "domain_check_s",
    "86400",
    "How often each site's domain registration is read from the `domains` provider, in seconds.",
)

SETTINGS = (PUBLIC_URL, CHROMIUM_PATH, CHECK_TIMEOUT_S, DOMAIN_WARN_DAYS, DOMAIN_CHECK_S)
