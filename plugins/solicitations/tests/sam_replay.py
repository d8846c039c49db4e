"""SAM.gov stand-in for this plugin's tests: an `httpx.MockTransport` that answers only
the exact requests it was told to expect (path and every query parameter, the API key
and the MM/dd/yyyy dates included) and notes every request it was asked.

The recorded answer is real (fixtures/sam_gov/, see fixtures/README.md). No recording
of a one-notice (`noticeid=`) answer exists: `notice_answer` builds one from a real
item of the recording inside the recorded envelope, with `totalRecords`/`limit` and the
self link set for that request, and says so where it is used.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sam_gov"
RECORDED = FIXTURES / "opportunities_v2_search_postedFrom_2026-01-01_postedTo_2026-02-02_limit10.json"
SEARCH_URL = "https://api.sam.gov/opportunities/v2/search"
# A stand-in API key, never a real one; tests assert it shows nowhere it should not.
API_KEY = "tw-test-sam-key-8c1f0e57"
KEY_ENV = {"TOLLWAY_SOLICITATIONS_SAM_API_KEY": API_KEY}
# What the recording answers: GET /opportunities/v2/search?limit=10&postedFrom=01/01/2026&postedTo=02/02/2026
RECORDED_QUERY = {
    "api_key": API_KEY,
    "postedFrom": "01/01/2026",
    "postedTo": "02/02/2026",
    "limit": "10",
    "offset": "0",
}
# The day the tests pretend it is (tool defaults and the watch window count from it).
TODAY = dt.date(2026, 2, 10)


def recorded() -> dict[str, Any]:
    return json.loads(RECORDED.read_bytes())


def recorded_item(notice_id: str) -> dict[str, Any]:
    return next(i for i in recorded()["opportunitiesData"] if i["noticeId"] == notice_id)


def notice_answer(*items: dict[str, Any]) -> bytes:
    """Built, not recorded: the recorded envelope holding `items` (real items of the recording)."""
    body = recorded()
    body.update(totalRecords=len(items), limit=1, opportunitiesData=[copy.deepcopy(i) for i in items])
    body["links"] = [{"rel": "self", "href": "https://api.sam.gov/prod/opportunities/v2/search?limit=1"}]
    return json.dumps(body).encode()


def notice_query(notice_id: str, posted_from: str = "02/11/2025", posted_to: str = "02/10/2026") -> dict[str, str]:
    """A lookup by id in the default window (the 364 days up to TODAY)."""
    return {
        "api_key": API_KEY,
        "noticeid": notice_id,
        "postedFrom": posted_from,
        "postedTo": posted_to,
        "limit": "1",
        "offset": "0",
    }


class SamReplay:
    """`expect(query, body)` routes; anything unexpected is a 599 naming the query asked."""

    def __init__(self) -> None:
        self.routes: list[tuple[dict[str, str], httpx.Response]] = []
        self.seen: list[httpx.Request] = []

    def expect(
        self, query: dict[str, str], body: bytes = b"", *, status: int = 200, headers: dict[str, str] | None = None
    ) -> SamReplay:
        self.routes.append(
            (
                query,
                httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})}),
            )
        )
        return self

    def recorded(self) -> SamReplay:
        return self.expect(RECORDED_QUERY, RECORDED.read_bytes())

    def queries(self) -> list[dict[str, str]]:
        return [dict(r.url.params) for r in self.seen]

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        asked = dict(request.url.params)
        if request.method == "GET" and str(request.url.copy_with(query=None)) == SEARCH_URL:
            for query, response in self.routes:
                if query == asked:
                    return httpx.Response(response.status_code, content=response.content, headers=response.headers)
        return httpx.Response(599, text=f"no recording for {sorted(asked)}")

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=self.transport)


def hear_everything(caplog: pytest.LogCaptureFixture) -> None:
    """Capture every log line, the HTTP client's per-request lines (which hold request
    URLs) included. The HTTP front configures logging when it starts (the root's handlers
    replaced, the client's lines turned down): call again after."""
    root = logging.getLogger()
    if caplog.handler not in root.handlers:
        root.addHandler(caplog.handler)
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="httpx")
