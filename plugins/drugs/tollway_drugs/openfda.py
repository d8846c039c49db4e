"""openFDA FAERS client: one `drug/event.json` count request and its parsing.

Uses only the `httpx.AsyncClient` it is handed (the kernel's `ctx.http`).
Every upstream failure becomes a `ToolError` (the call is not charged); the
no-match 404 `{"error": {"code": "NOT_FOUND", ...}}` is an empty answer.

Count answer (openFDA docs, confirmed by the recording in
`tests/fixtures/openfda/drug_event_count/`):
`{"meta": {"disclaimer", "terms", "license", "last_updated": "YYYY-MM-DD"},
  "results": [{"term": "NAUSEA", "count": 27541}, ...]}`.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from tollway import Setting
from tollway import ToolError

DEFAULT_BASE_URL = "https://api.fda.gov"
BASE_URL_SETTING = Setting(
    family="drugs",
    name="openfda_api_url",
    default=DEFAULT_BASE_URL,
    description="Base URL of the openFDA API (or a mirror / local replay server serving the same paths).",
)
API_KEY_SETTING = Setting(
    family="drugs",
    name="openfda_api_key",
    default=None,
    description="Optional openFDA API key sent as `api_key` (raises openFDA's daily request allowance).",
)
EVENT_PATH = "/drug/event.json"
# The product name as reported on the FAERS report (what the tool matches, docs/drugs.md).
SEARCH_FIELD = "patient.drug.medicinalproduct"
COUNT_FIELD = "patient.reaction.reactionmeddrapt.exact"
REQUEST_TIMEOUT_S = 15.0
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


@dataclass(frozen=True)
class Reaction:
    reaction: str  # sentence case
    reports: int


@dataclass(frozen=True)
class ReactionCounts:
    reactions: list[Reaction]  # most reported first
    last_updated: str | None  # openFDA's meta.last_updated, YYYY-MM-DD


def _unavailable(message: str, **details: Any) -> ToolError:
    return ToolError("provider_unavailable", message, status=503, details=details or None)


def normalize_drug_name(name: str) -> str:
    """Trimmed, single-spaced, upper case: the phrase sent and the facts' key."""
    return " ".join(name.split()).upper()


def search_expression(name: str) -> str:
    """`patient.drug.medicinalproduct:"WORD WORD"`: quoting makes several words one
    phrase. The input rules refuse quotes and backslashes, so the phrase cannot end early."""
    return f'{SEARCH_FIELD}:"{normalize_drug_name(name)}"'


def sentence_case(term: str) -> str:
    """`MALIGNANT NEOPLASM PROGRESSION` -> `Malignant neoplasm progression`."""
    text = " ".join(term.split()).lower()
    return text[:1].upper() + text[1:]


def _date(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    m = _ISO_DATE.match(value.strip())
    if not m:
        return None
    try:
        return _dt.date(*(int(g) for g in m.groups())).isoformat()
    except ValueError:
        return None


def parse_body(body: Any) -> ReactionCounts:
    """A decoded 200 count answer -> ReactionCounts; anything else -> provider_unavailable."""
    if not isinstance(body, Mapping) or not isinstance(body.get("results"), list):
        raise _unavailable("openFDA answered without a result list.")
    merged: dict[str, int] = {}
    for item in body["results"]:
        if not isinstance(item, Mapping):
            continue
        term, count = item.get("term"), item.get("count")
        if not isinstance(term, str) or not term.strip():
            continue
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            continue
        key = sentence_case(term)
        merged[key] = merged.get(key, 0) + count  # terms differing only in case are one reaction
    # Most reported first; equal counts alphabetically, so the order is deterministic.
    reactions = [Reaction(r, n) for r, n in sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))]
    meta = body.get("meta")
    return ReactionCounts(reactions=reactions, last_updated=_date(meta.get("last_updated")) if isinstance(meta, Mapping) else None)


_NOT_JSON = object()


def _decode(response: httpx.Response) -> Any:
    try:
        return msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        return _NOT_JSON


def _error_code(body: Any) -> str | None:
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        code = body["error"].get("code")
        return code if isinstance(code, str) else None
    return None


def base_url_from(settings: Mapping[str, str]) -> str:
    s = BASE_URL_SETTING
    url = settings.get(s.name) or settings.get(s.env_var) or os.environ.get(s.env_var) or DEFAULT_BASE_URL
    return url.strip().rstrip("/") or DEFAULT_BASE_URL


def api_key_from(settings: Mapping[str, str]) -> str | None:
    s = API_KEY_SETTING
    key = settings.get(s.name) or settings.get(s.env_var) or os.environ.get(s.env_var)
    return (key.strip() or None) if key else None


def query_params(drug_name: str, limit: int, api_key: str | None = None) -> dict[str, str]:
    params = {"search": search_expression(drug_name), "count": COUNT_FIELD, "limit": str(limit)}
    if api_key:
        params["api_key"] = api_key
    return params


async def fetch_reaction_counts(
    http: httpx.AsyncClient, base_url: str, drug_name: str, limit: int, api_key: str | None = None
) -> ReactionCounts:
    """GET {base}/drug/event.json?search=...&count=...reactionmeddrapt.exact&limit=N."""
    url = base_url.rstrip("/") + EVENT_PATH
    try:
        response = await http.get(url, params=query_params(drug_name, limit, api_key), timeout=REQUEST_TIMEOUT_S)
    except httpx.TimeoutException as exc:
        raise _unavailable("openFDA did not answer in time.", reason="timeout") from exc
    except httpx.HTTPError as exc:
        raise _unavailable("openFDA could not be reached.", reason=type(exc).__name__) from exc

    status = response.status_code
    body = _decode(response)
    if status == 429 or _error_code(body) == "OVER_RATE_LIMIT":
        details: dict[str, Any] = {"upstream_status": status}
        retry_after = response.headers.get("retry-after")
        if retry_after and retry_after.strip().isdigit():
            details["retry_after"] = int(retry_after.strip())
        raise ToolError("rate_limited", "openFDA is limiting requests; try again later.", status=503, details=details)
    if status == 404 and _error_code(body) == "NOT_FOUND":
        return ReactionCounts(reactions=[], last_updated=None)
    if status in (401, 403):
        raise ToolError("provider_auth", "openFDA refused the request's credentials.", status=503, details={"upstream_status": status})
    if status != 200:
        raise _unavailable(f"openFDA answered HTTP {status}.", upstream_status=status)
    if body is _NOT_JSON:
        raise _unavailable("openFDA answered with something other than JSON.", upstream_status=status)
    return parse_body(body)
