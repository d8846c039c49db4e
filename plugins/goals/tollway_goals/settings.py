"""The goals plugin's settings (TOLLWAY_GOALS_*)."""

from __future__ import annotations

from tollway import Setting

FAMILY = "goals"
CASES_ENABLED_FOR = Setting(
    FAMILY,
    "cases_enabled_for",
    "*",
    "Agents whose one-off goals work through cases (cases are in limited preview): comma-separated agent ids or wallet "
    "addresses, or * for every agent.",
)
MAX_BUDGET = Setting(FAMILY, "max_budget_usdc", "1000", "The largest budget one goal may be given, in USDC.")
SESSION_LEASE_S = Setting(
    FAMILY, "session_lease_s", "60", "How long a worker holds a running session between heartbeats."
)
POLL_INTERVAL_S = Setting(FAMILY, "poll_interval_s", "1", "How often workers look for sessions to run.")
SESSIONS_PER_WORKER = Setting(FAMILY, "sessions_per_worker", "8", "How many sessions one worker process runs at once.")
LLM_STEP_COST = Setting(
    FAMILY,
    "llm_step_usdc",
    "0.002",
    "What one language-model step costs a goal's budget, in USDC (each step also counts toward a case's step_limit).",
)
IDLE_TIMEOUT_S = Setting(
    FAMILY,
    "idle_timeout_s",
    "86400",
    "A running goal that has been idle this long (no session pending or running, no question to a person open, no event, "
    "reply or step since) ends `expired` and its unspent budget goes back to its creator. Default one day.",
)
MAX_STEPS_PER_RUN = Setting(
    FAMILY, "max_steps_per_run", "50", "Language-model steps a session takes in one run before it yields."
)

PUBLIC_URL = Setting(
    FAMILY,
    "public_url",
    "http://127.0.0.1:8402",
    "The service's public base URL, for the approval links people open (e.g. https://tools.example.com).",
)

GITHUB_API_URL = Setting(
    FAMILY,
    "github_api_url",
    "https://api.github.com",
    "GitHub's REST API base URL (GitHub Enterprise: https://HOST/api/v3).",
)
GITHUB_WEB_URL = Setting(
    FAMILY,
    "github_web_url",
    "https://github.com",
    "GitHub's web base URL, for the app-installation links of new connections.",
)
GITHUB_APP_ID = Setting(FAMILY, "github_app_id", None, "The GitHub App's id, for code-host connections.")
GITHUB_APP_SLUG = Setting(
    FAMILY,
    "github_app_slug",
    None,
    "The GitHub App's slug (github.com/apps/<slug>); its Callback URL is <public_url>/v1/connections/callback, with "
    "'Request user authorization (OAuth) during installation' ticked.",
)
GITHUB_PRIVATE_KEY = Setting(
    FAMILY, "github_private_key", None, "The GitHub App's private key (PEM text).", secret=True
)
GITHUB_CLIENT_ID = Setting(
    FAMILY,
    "github_client_id",
    None,
    "The GitHub App's client id, to exchange the code GitHub returns after installation for the installing user's token.",
)
GITHUB_CLIENT_SECRET = Setting(
    FAMILY,
    "github_client_secret",
    None,
    "The GitHub App's client secret, to prove which user completed an installation before a connection is activated.",
    secret=True,
)
GITHUB_APP = (GITHUB_APP_ID, GITHUB_APP_SLUG, GITHUB_PRIVATE_KEY, GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET)

SETTINGS = (
    PUBLIC_URL,
    CASES_ENABLED_FOR,
    MAX_BUDGET,
    SESSION_LEASE_S,
    POLL_INTERVAL_S,
    SESSIONS_PER_WORKER,
    LLM_STEP_COST,
    MAX_STEPS_PER_RUN,
    IDLE_TIMEOUT_S,
    GITHUB_API_URL,
    GITHUB_WEB_URL,
    *GITHUB_APP,
)
