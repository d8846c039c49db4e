"""openFDA FAERS client: one `drug/event.json` count request and its parsing.

Requests go through `OPENFDA` (a `tollway.Upstream`: the kernel's `ctx.http`, the
`openfda_api_url` / `openfda_api_key` settings, one mapping of upstream failures to
`ToolError`s, so the call is not charged); the no-match 404
`{"error": {"code": "NOT_FOUND", ...}}` is an empty answer.

Count answer (openFDA docs, confirmed by the recording in
`tests/fixtures/openfda/drug_event_count/`):
`{"meta": {"disclaimer", "terms", "license", "last_updated": "YYYY-MM-DD"},
  "results": [{"term": "NAUSEA", "count": 27541}, ...]}`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tollway import ToolContext, Upstream

OPENFDA = Upstream(
    family="drugs",
    name="openfda",
    label="openFDA",
    default_base_url="https://api.fda.gov",
    description="Base URL of the openFDA API (or a mirror / local replay server serving the same paths).",
    api_key="Optional openFDA API key sent as `api_key` (raises openFDA's daily request allowance).",
)
EVENT_PATH = "/drug/event.json"
# The product name as reported on the FAERS report (what the tool matches, docs/drugs.md).
SEARCH_FIELD = "patient.drug.medicinalproduct"
COUNT_FIELD = "patient.reaction.reactionmeddrapt.exact"
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


@dataclass(frozen=True)
class Reaction:
    reaction: str  # sentence case
    reports: int


@dataclass(frozen=True)
class ReactionCounts:
    reactions: list[Reaction]  # most reported first
    last_updated: str | None  # openFDA's meta.last_updated, YYYY-MM-DD


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
        raise OPENFDA.unavailable("openFDA answered without a result list.")
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
    return ReactionCounts(
        reactions=reactions, last_updated=_date(meta.get("last_updated")) if isinstance(meta, Mapping) else None
    )


def _error_code(body: Any) -> str | None:
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        code = body["error"].get("code")
        return code if isinstance(code, str) else None
    return None


def query_params(drug_name: str, limit: int, api_key: str | None = None) -> dict[str, str]:
    params = {"search": search_expression(drug_name), "count": COUNT_FIELD, "limit": str(limit)}
    if api_key:
        params["api_key"] = api_key
    return params


async def fetch_reaction_counts(ctx: ToolContext, drug_name: str, limit: int) -> ReactionCounts:
    """GET {base}/drug/event.json?search=...&count=...reactionmeddrapt.exact&limit=N."""
    reply = await OPENFDA.send(ctx, EVENT_PATH, params=query_params(drug_name, limit, OPENFDA.api_key(ctx)))
    code = _error_code(reply.body)
    if code == "OVER_RATE_LIMIT":  # openFDA's own rate-limit fault, whatever the status
        raise OPENFDA.rate_limited(reply)
    if reply.status == 404 and code == "NOT_FOUND":
        return ReactionCounts(reactions=[], last_updated=None)
    return parse_body(OPENFDA.json_of(reply))
