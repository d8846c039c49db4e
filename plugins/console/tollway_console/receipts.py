"""The receipts pages: every agent's receipts, filtered by agent, tool, category and period,
one page at a time by keyset (`Platform.receipts_page`), and one receipt with each of its
signed revisions checked against the published keys (`tollway.helpers.verify_receipt`)."""

from __future__ import annotations

import base64
import dataclasses
from urllib.parse import urlencode

from tollway import JSONObject, Platform, RouteCall, now_ms
from tollway.helpers import verify_receipt

PAGE_SIZE = 50
PERIODS = (("1", "Last day"), ("7", "Last 7 days"), ("30", "Last 30 days"), ("90", "Last 90 days"), ("all", "All time"))
CATEGORIES = ("data", "verification", "communication", "commerce", "infrastructure", "agent_to_agent")
DAY_MS = 86_400_000


@dataclasses.dataclass(frozen=True)
class Filters:
    agent: str
    tool: str
    category: str
    days: str
    before: str

    @classmethod
    def of(cls, call: RouteCall) -> Filters:
        q = call.query

        def text(name: str, most: int) -> str:
            return (q.get(name) or "").strip()[:most]

        days = q.get("days", "30")
        category = q.get("category", "")
        return cls(
            agent=text("agent", 64),
            tool=text("tool", 64),
            category=category if category in CATEGORIES else "",
            days=days if days in {d for d, _ in PERIODS} else "30",
            before=text("before", 80),
        )

    def query(self, **change: str) -> str:
        """This page's query string with `change` applied (empty values left out)."""
        values = {**dataclasses.asdict(self), **change}
        return urlencode({k: v for k, v in values.items() if v})


async def listing(platform: Platform, filters: Filters) -> JSONObject:
    return await platform.receipts_page(
        agent_id=filters.agent or None,
        tool=filters.tool or None,
        category=filters.category or None,
        since_ms=None if filters.days == "all" else now_ms() - int(filters.days) * DAY_MS,
        before=filters.before or None,
        limit=PAGE_SIZE,
    )


def _key(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclasses.dataclass(frozen=True)
class Revision:
    body: JSONObject
    valid: bool
    reason: str


async def revisions(platform: Platform, receipt_id: str) -> list[Revision]:
    """Each signed revision, oldest first, with whether its signature holds."""
    keys = {k["key_id"]: _key(str(k["public_key"])) for k in await platform.receipt_keys()}
    out = []
    for body in await platform.receipt_revisions(receipt_id):
        valid, reason = verify_receipt(body, keys)
        out.append(Revision(body, valid, reason))
    return out
