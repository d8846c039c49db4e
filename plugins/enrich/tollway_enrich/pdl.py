"""The `pdl` enrichment provider: People Data Labs' Person Enrichment API (`GET
{api}/v5/person/enrich` with `X-Api-Key`), answering one person record or None when it
matches nobody. Failures are ToolErrors that never name the key."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import httpx

from tollway import Provider, Setting, ToolError, to_micro

KIND = "enrichment"
API_KEY = Setting(KIND, "pdl_api_key", None, "The People Data Labs API key.", secret=True)
API_URL = Setting(KIND, "pdl_api_url", "https://api.peopledatalabs.com", "The People Data Labs API's base URL.")
COST = Setting(KIND, "pdl_cost_usdc", "0.01", "What one matched enrichment costs us in USDC under the operator's plan.")
MIN_LIKELIHOOD = 6  # PDL's 1..10 match confidence: below this a match is too weak to answer with
TIMEOUT = httpx.Timeout(20.0, connect=5.0)


@dataclasses.dataclass(frozen=True)
class PeopleDataLabs:
    http: httpx.AsyncClient
    base_url: str
    api_key: str = dataclasses.field(repr=False)

    async def person(self, params: Mapping[str, str]) -> dict[str, Any] | None:
        """The best matching person for `params` (email, profile, name, company, ...), or None."""
        try:
            response = await self.http.get(
                f"{self.base_url.rstrip('/')}/v5/person/enrich",
                params={**params, "min_likelihood": str(MIN_LIKELIHOOD)},
                headers={"X-Api-Key": self.api_key, "Accept": "application/json"},
                timeout=TIMEOUT,
                follow_redirects=False,
            )
        except httpx.TimeoutException as exc:
            raise ToolError(
                "provider_unavailable", "The enrichment provider did not answer in time.", status=504
            ) from exc
        except httpx.HTTPError as exc:
            raise ToolError(
                "provider_unavailable", "The enrichment provider could not be reached.", status=503
            ) from exc
        if response.status_code == 404:
            return None
        if response.status_code in (401, 403):
            raise ToolError("provider_auth", "The enrichment provider refused this service's credentials.", status=503)
        if response.status_code == 429:
            raise ToolError(
                "rate_limited", "The enrichment provider is limiting requests; try again later.", status=503
            )
        if response.status_code != 200:
            raise ToolError(
                "provider_unavailable", f"The enrichment provider answered HTTP {response.status_code}.", status=503
            )
        try:
            body = response.json()
        except ValueError as exc:
            raise ToolError(
                "provider_unavailable", "The enrichment provider's answer is not JSON.", status=503
            ) from exc
        data = body.get("data") if isinstance(body, dict) else None
        return {**data, "likelihood": body.get("likelihood")} if isinstance(data, dict) else None


def _build(settings: Mapping[str, str], http: httpx.AsyncClient) -> PeopleDataLabs:
    return PeopleDataLabs(http, settings.get("pdl_api_url") or API_URL.default or "", settings["pdl_api_key"])


PDL = Provider(
    kind=KIND,
    name="pdl",
    build=_build,
    settings=(API_KEY, API_URL, COST),
    requires=(API_KEY,),
    cost_estimate=lambda settings: to_micro(settings.get("pdl_cost_usdc") or "0"),
    description="People Data Labs' Person Enrichment API.",
)
