"""Tests for `product_drug_adverse_events`, replaying openFDA answers.

Recorded answers used (see `fixtures/README.md`):
- `openfda/drug_event_count/count_reactionmeddrapt_pembrolizumab_limit1_2026-08-11.json`,
  a real `drug/event.json` count answer (one term, `limit=1`). It was recorded for
  a broader search (generic_name OR brand_name OR medicinalproduct); here it is
  served, unchanged, as the answer to this tool's own request for the same drug.
- `openfda/errors/*.json`, openFDA's real error bodies (404 no match, 400, 403, 500).

No recorded count answer with many terms exists, so `MANY_TERMS` below is built
from openFDA's documented format, using the documentation's own illustration
(DRUG INEFFECTIVE 32584, NAUSEA 27541, FATIGUE 23341).

Every answer is served through an `httpx.MockTransport` whose handler first
asserts the exact URL and query openFDA would receive. No test reaches the internet.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_drugs import openfda
from tollway_drugs.tool import (
    PRODUCT_DRUG_ADVERSE_EVENTS,
    DrugAdverseEventsAnswer,
    DrugAdverseEventsInput,
    check,
    facts,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded answers, see fixtures/README.md
OPENFDA = FIXTURES / "openfda"
PEMBRO = OPENFDA / "drug_event_count" / "count_reactionmeddrapt_pembrolizumab_limit1_2026-08-11.json"
ERRORS = OPENFDA / "errors"
EVENT_URL = "https://api.fda.gov/drug/event.json"

# Built from the documented format (no recording with several terms exists); the
# terms and counts are the openFDA documentation's own illustration, sent out of
# order on purpose, plus a term differing only in case.
MANY_TERMS = msgspec.json.encode(
    {
        "meta": {
            "disclaimer": "Do not rely on openFDA to make decisions regarding medical care.",
            "terms": "https://open.fda.gov/terms/",
            "license": "https://open.fda.gov/license/",
            "last_updated": "2026-07-30",
        },
        "results": [
            {"term": "NAUSEA", "count": 27541},
            {"term": "DRUG INEFFECTIVE", "count": 32584},
            {"term": "FATIGUE", "count": 23341},
            {"term": "Fatigue", "count": 9},
        ],
    }
)


def query(name: str = "PEMBROLIZUMAB", limit: int = 1) -> dict[str, str]:
    return {
        "search": f'patient.drug.medicinalproduct:"{name}"',
        "count": "patient.reaction.reactionmeddrapt.exact",
        "limit": str(limit),
    }


def replay(
    body: bytes,
    *,
    status: int = 200,
    expect_url: str = EVENT_URL,
    expect_query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    expected = expect_query or query()

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert request.method == "GET"
        assert str(request.url.copy_with(query=None)) == expect_url
        assert dict(request.url.params) == expected
        return httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def failing(exc: Callable[[httpx.Request], Exception]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def value(**fields: object) -> DrugAdverseEventsInput:
    return msgspec.convert({"drug_name": "pembrolizumab", "limit": 1, **fields}, DrugAdverseEventsInput, strict=True)


async def call(
    http: httpx.AsyncClient, v: DrugAdverseEventsInput | None = None, **settings: str
) -> DrugAdverseEventsAnswer:
    v = v or value()
    check(v)
    ctx = ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)
    return await PRODUCT_DRUG_ADVERSE_EVENTS.run(v, ctx)


# --- the recorded answer ------------------------------------------------------------


async def test_recorded_answer() -> None:
    http, seen = replay(PEMBRO.read_bytes())
    answer = await call(http)
    assert len(seen) == 1
    assert answer.result.drug_name == "pembrolizumab"
    assert [(r.reaction, r.reports) for r in answer.result.reactions] == [("Malignant neoplasm progression", 12016)]
    assert answer.evidence.source == "FDA" and answer.evidence.source_kind == "public"
    assert answer.evidence.as_of == "2026-07-30"


async def test_raw_query_is_a_quoted_phrase() -> None:
    http, seen = replay(MANY_TERMS, expect_query=query("KEYTRUDA INJECTION", 10))
    await call(http, value(drug_name="  Keytruda   injection ", limit=10))
    raw = seen[0].url.query.decode()
    assert "search=patient.drug.medicinalproduct%3A%22KEYTRUDA+INJECTION%22" in raw


async def test_most_reported_first_in_sentence_case() -> None:
    http, _ = replay(MANY_TERMS, expect_query=query("PEMBROLIZUMAB", 10))
    answer = await call(http, value(limit=10))
    assert [(r.reaction, r.reports) for r in answer.result.reactions] == [
        ("Drug ineffective", 32584),
        ("Nausea", 27541),
        ("Fatigue", 23350),
    ]


async def test_limit_is_sent_and_applied() -> None:
    http, _ = replay(MANY_TERMS, expect_query=query("PEMBROLIZUMAB", 2))
    answer = await call(http, value(limit=2))
    assert [r.reaction for r in answer.result.reactions] == ["Drug ineffective", "Nausea"]


async def test_base_url_and_api_key_settings() -> None:
    http, _ = replay(
        PEMBRO.read_bytes(),
        expect_url="http://mirror.local/fda/drug/event.json",
        expect_query={**query(), "api_key": "k1"},
    )
    answer = await call(http, openfda_api_url="http://mirror.local/fda/", openfda_api_key="k1")
    assert answer.result.reactions


async def test_env_vars_reach_the_tool_through_the_kernel(kernel_factory) -> None:
    env = {"TOLLWAY_DRUGS_OPENFDA_API_URL": "http://env.local", "TOLLWAY_DRUGS_OPENFDA_API_KEY": " k2 "}
    kernel = await kernel_factory(installed={"tollway_drugs"}, env=env)
    http, _ = replay(
        PEMBRO.read_bytes(), expect_url="http://env.local/drug/event.json", expect_query={**query(), "api_key": "k2"}
    )
    assert (await call(http, **kernel.family_settings("drugs"))).result.reactions


# --- no match and failures ------------------------------------------------------------


async def test_recorded_no_match_404_is_an_empty_list() -> None:
    http, _ = replay((ERRORS / "404_not_found_no_matches.json").read_bytes(), status=404, expect_query=query("ZZQX", 1))
    answer = await call(http, value(drug_name="zzqx"))
    assert answer.result.reactions == [] and answer.result.drug_name == "zzqx"
    assert answer.evidence.as_of is None


async def test_empty_results_is_an_empty_list() -> None:
    http, _ = replay(b'{"meta":{"last_updated":"2026-07-30"},"results":[]}')
    answer = await call(http)
    assert answer.result.reactions == [] and answer.evidence.as_of == "2026-07-30"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, (ERRORS / "400_bad_request_invalid_sort_field.json").read_bytes()),
        (500, (ERRORS / "500_server_error_lexical_error.json").read_bytes()),
        (404, b"<html>Not Found</html>"),
        (502, b"<html>Bad Gateway</html>"),
        (503, b""),
        (200, b"<html>maintenance</html>"),
        (200, b'{"meta":{}}'),
        (200, b"[]"),
    ],
)
async def test_upstream_failures_are_provider_unavailable(status: int, body: bytes) -> None:
    http, _ = replay(body, status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


async def test_recorded_403_is_provider_auth() -> None:
    http, _ = replay((ERRORS / "403_api_key_invalid.json").read_bytes(), status=403)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert info.value.code == "provider_auth"


async def test_429_is_rate_limited() -> None:
    # openFDA's rate-limit body is documented as error code OVER_RATE_LIMIT (no recording exists).
    http, _ = replay(
        b'{"error":{"code":"OVER_RATE_LIMIT","message":"limit"}}', status=429, headers={"retry-after": "5"}
    )
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status) == ("rate_limited", 503)
    assert info.value.details["retry_after"] == 5


async def test_over_rate_limit_fault_is_rate_limited_whatever_the_status() -> None:
    http, _ = replay(b'{"error":{"code":"OVER_RATE_LIMIT","message":"limit"}}', status=403)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.details) == ("rate_limited", {"upstream_status": 403})


@pytest.mark.parametrize(
    "exc", [lambda r: httpx.ReadTimeout("t", request=r), lambda r: httpx.ConnectError("refused", request=r)]
)
async def test_timeouts_and_connection_errors_are_provider_unavailable(exc) -> None:
    with pytest.raises(ToolError) as info:
        await call(failing(exc))
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


# --- parsing and input rules -----------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "expected"),
    [("MALIGNANT NEOPLASM PROGRESSION", "Malignant neoplasm progression"), ("nausea", "Nausea"),
     ("  DRUG   INEFFECTIVE ", "Drug ineffective"), ("X", "X")],
)  # fmt: skip
def test_sentence_case(term: str, expected: str) -> None:
    assert openfda.sentence_case(term) == expected


@pytest.mark.parametrize(
    "fields",
    [{"drug_name": "a"}, {"drug_name": "x" * 101}, {"drug_name": 'say "hi"'}, {"drug_name": "back\\slash"},
     {"drug_name": "tab\there"}, {"limit": 0}, {"limit": 26}, {"drug": "aspirin"}],
)  # fmt: skip
def test_msgspec_refuses_bad_input(fields: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


@pytest.mark.parametrize("name", ["  ", " a ", "--", "()"])
def test_check_refuses_names_without_letters(name: str) -> None:
    with pytest.raises(FieldError) as info:
        check(value(drug_name=name))
    assert info.value.field == "drug_name"


def test_defaults_examples_and_price() -> None:
    assert msgspec.convert({"drug_name": "aspirin"}, DrugAdverseEventsInput).limit == 10
    for example in PRODUCT_DRUG_ADVERSE_EVENTS.examples:
        check(msgspec.convert(dict(example.input), DrugAdverseEventsInput, strict=True))
    assert PRODUCT_DRUG_ADVERSE_EVENTS.quote(value()) == 5000  # 0.005 USDC


# --- facts and snapshot ------------------------------------------------------------------


async def test_fact_is_keyed_by_normalized_drug_name() -> None:
    http, _ = replay(PEMBRO.read_bytes())
    v = value(drug_name=" Pembrolizumab ")
    (fact,) = facts(v, await call(http, v))
    assert fact.attribute == "product_drug_adverse_events" and fact.key == "PEMBROLIZUMAB"
    assert fact.value == {"top_reports": 12016, "reactions": {"Malignant neoplasm progression": 12016}}
    assert fact.source == "FDA" and fact.as_of == "2026-07-30" and fact.public


async def test_answer_snapshot(snapshot) -> None:
    http, _ = replay(PEMBRO.read_bytes())
    answer = msgspec.to_builtins(await call(http))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    assert answer == snapshot
