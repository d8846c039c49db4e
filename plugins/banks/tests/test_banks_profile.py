"""Tests for `company_bank_profile`, replaying FDIC BankFind answers.

No recorded `api.fdic.gov/banks/institutions` JSON exists (see `fixtures/README.md`). The institution row used here is real: the `/institutions`
row FDIC returned for CERT 10057 (Bank of Hancock County, 2020), as printed in
`fixtures/fdic/bankfind_docs_2020/bankfind_functions_example_rows.md`
(a Python dict repr, read with `ast.literal_eval`). The envelope around it
(`meta.total`, `meta.parameters`, `meta.index`, `totals.count`) is built here from
FDIC's published API definition (https://banks.data.fdic.gov/docs/, `swagger.yaml`),
and the extra rows of the name-search fixture are that real row with documented
fields changed (a closed bank, a credit union); each is marked where it is built.

Every answer is served through an `httpx.MockTransport` whose handler first
asserts the exact URL and query FDIC would receive. No test reaches the internet.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_banks import fdic
from tollway_banks.tool import (
    COMPANY_BANK_PROFILE,
    BankProfileAnswer,
    BankProfileInput,
    check,
    facts,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded answers, see fixtures/README.md
DOC_ROWS = FIXTURES / "fdic" / "bankfind_docs_2020" / "bankfind_functions_example_rows.md"
INSTITUTIONS_URL = "https://api.fdic.gov/banks/institutions"


def recorded_institution_item() -> dict[str, Any]:
    """The real `/institutions` item `{'data': {...}, 'score': 1}` from the 2020 doc page."""
    text = DOC_ROWS.read_text()
    section = text.split("## **get_institutions**", 1)[1].split("## **get_locations**", 1)[0]
    block = re.search(r'=== "Data"\s*```python\n(.*?)```', section, re.DOTALL)
    assert block, "institutions example row not found"
    return ast.literal_eval(block.group(1).strip())


def envelope(items: list[dict[str, Any]], total: int, params: dict[str, Any]) -> bytes:
    """FDIC's documented 200 envelope (swagger.yaml: meta + data + totals); built, not recorded."""
    body = {
        "meta": {
            "total": total,
            "parameters": params,
            "index": {"name": "20200808_institutions", "createTimestamp": "2020-08-08T00:00:00.000Z"},
        },
        "data": items,
        "totals": {"count": total},
    }
    return msgspec.json.encode(body)


HANCOCK = recorded_institution_item()


def cert_query(cert: int = 10057, limit: int = 5) -> dict[str, str]:
    return {"filters": f"CERT:{cert}", "limit": str(limit), "fields": fdic.FIELDS, "offset": "0", "format": "json"}


def name_query(text: str, limit: int = 100) -> dict[str, str]:
    return {"search": f"NAME:{text}", "limit": str(limit), "fields": fdic.FIELDS, "offset": "0", "format": "json"}


def replay(
    body: bytes,
    *,
    status: int = 200,
    expect_url: str = INSTITUTIONS_URL,
    expect_query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    query = expect_query or cert_query()

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert request.method == "GET"
        assert str(request.url.copy_with(query=None)) == expect_url
        assert dict(request.url.params) == query
        return httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def failing(exc: Callable[[httpx.Request], Exception]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def value(**fields: object) -> BankProfileInput:
    data = {"fdic_certificate": 10057, **fields}
    v = msgspec.convert({k: x for k, x in data.items() if x is not None}, BankProfileInput, strict=True)
    return v


async def call(http: httpx.AsyncClient, v: BankProfileInput | None = None, **settings: str) -> BankProfileAnswer:
    v = v or value()
    check(v)
    ctx = ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)
    return await COMPANY_BANK_PROFILE.run(v, ctx)


def cert_body() -> bytes:
    return envelope([HANCOCK], 1, {"filters": "CERT:10057"})


# --- by certificate --------------------------------------------------------------


async def test_certificate_lookup_maps_every_bank_field() -> None:
    http, seen = replay(cert_body())
    answer = await call(http)
    assert len(seen) == 1
    assert answer.result.total == 1
    (bank,) = answer.result.banks
    assert bank.name == "Bank of Hancock County"
    assert bank.fdic_certificate == 10057  # FDIC sent the string '10057'
    assert bank.active is True
    assert (bank.city, bank.state) == ("Sparta", "GA")
    assert bank.regulator == "FDIC" and bank.charter_class == "NM"
    assert bank.established_on == "1904-09-01"
    assert bank.website == "http://www.bankofhancock.com"
    assert bank.total_assets_usd == 76_416_000  # ASSET is in thousands
    assert bank.total_deposits_usd == 59_267_000
    assert bank.reported_on == "2020-03-31"
    assert answer.evidence.source == "FDIC" and answer.evidence.source_kind == "public"
    assert answer.evidence.as_of == "2020-03-31"


async def test_base_url_setting_and_api_key_are_used() -> None:
    http, _ = replay(
        cert_body(),
        expect_url="http://mirror.local/fdic/institutions",
        expect_query={**cert_query(), "api_key": "k123"},
    )
    answer = await call(http, fdic_api_url="http://mirror.local/fdic/", fdic_api_key="k123")
    assert answer.result.total == 1


async def test_env_var_base_url_reaches_the_tool_through_the_kernel(kernel_factory) -> None:
    kernel = await kernel_factory(
        installed={"tollway_banks"}, env={"TOLLWAY_BANKS_FDIC_API_URL": "http://env.local/banks"}
    )
    http, _ = replay(cert_body(), expect_url="http://env.local/banks/institutions")
    assert (await call(http, **kernel.family_settings("banks"))).result.total == 1


async def test_certificate_lookup_keeps_only_the_exact_certificate() -> None:
    other = copy.deepcopy(HANCOCK)
    other["data"]["CERT"] = 628  # a mirror that ignored the filter (built row)
    http, _ = replay(envelope([other, HANCOCK], 2, {}))
    answer = await call(http)
    assert answer.result.total == 1
    assert [b.fdic_certificate for b in answer.result.banks] == [10057]


async def test_no_match_is_total_zero() -> None:
    http, _ = replay(envelope([], 0, {"filters": "CERT:99999999"}), expect_query=cert_query(99999999))
    answer = await call(http, value(fdic_certificate=99999999))
    assert answer.result.total == 0 and answer.result.banks == []
    assert answer.evidence.as_of is None


async def test_closed_institution_is_included_inactive() -> None:
    closed = copy.deepcopy(HANCOCK)
    closed["data"].update({"ACTIVE": 0, "INACTIVE": 1})  # built: a closed bank per ACTIVE's definition
    http, _ = replay(envelope([closed], 1, {}))
    (bank,) = (await call(http)).result.banks
    assert bank.active is False


# --- by name ----------------------------------------------------------------------


def name_body() -> bytes:
    """Built from the real row: FDIC's default NAME order, with differing scores."""
    partial = copy.deepcopy(HANCOCK)
    partial["data"].update({"NAME": "Bank of Hancock", "CERT": 11111, "ACTIVE": 0, "ASSET": 5, "DEP": 4})
    partial["score"] = 3.5
    exact = copy.deepcopy(HANCOCK)
    exact["score"] = 2.0
    credit_union = copy.deepcopy(HANCOCK)
    credit_union["data"].update(
        {"NAME": "Hancock County Credit Union", "CERT": 22222, "REGAGNT": "NCUA", "BKCLASS": "CU"}
    )
    credit_union["score"] = 9.0
    other = copy.deepcopy(HANCOCK)
    other["data"].update({"NAME": "Hancock Bank", "CERT": 33333, "REGAGNT": "FRB", "BKCLASS": "SM", "ASSET": 100})
    other["score"] = 3.5
    return envelope([partial, other, exact, credit_union], 7, {"search": "NAME:BANK OF HANCOCK COUNTY"})


async def test_name_search_ranks_best_first_and_excludes_credit_unions() -> None:
    http, _ = replay(name_body(), expect_query=name_query("BANK OF HANCOCK COUNTY"))
    answer = await call(http, value(fdic_certificate=None, name="  bank of hancock county "))
    names = [b.name for b in answer.result.banks]
    # exact name first; then score; at equal score the open bank before the closed one
    assert names == ["Bank of Hancock County", "Hancock Bank", "Bank of Hancock"]
    assert answer.result.total == 6  # FDIC's 7, less the credit union it counted
    assert answer.result.banks[1].regulator == "FED"


async def test_name_search_limit_truncates_but_total_counts_all() -> None:
    http, _ = replay(name_body(), expect_query=name_query("BANK OF HANCOCK COUNTY"))
    answer = await call(http, value(fdic_certificate=None, name="Bank of Hancock County", limit=1))
    assert [b.fdic_certificate for b in answer.result.banks] == [10057]
    assert answer.result.total == 6


async def test_name_query_syntax_is_neutralised() -> None:
    http, _ = replay(envelope([], 0, {}), expect_query=name_query("FIRST NATIONAL BANK OF X"))
    answer = await call(http, value(fdic_certificate=None, name='First "National": Bank (of) X*'))
    assert answer.result.total == 0


# --- parsing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("09/01/1904", "1904-09-01"), ("2020-03-31", "2020-03-31"), ("20200331", "2020-03-31"),
     ("12/31/9999", None), ("31-Dec-9999", None), ("", None), (None, None), ("13/45/2020", None)],
)  # fmt: skip
def test_parse_date(raw: Any, expected: str | None) -> None:
    assert fdic.parse_date(raw) == expected


def test_missing_fields_become_null_except_active() -> None:
    bank = fdic.parse_institution({"CERT": 5})
    assert bank.fdic_certificate == 5 and bank.active is False
    assert bank.name is None and bank.regulator is None and bank.total_assets_usd is None
    assert bank.website is None and bank.established_on is None and bank.state is None


@pytest.mark.parametrize(
    ("code", "expected"), [("OCC", "OCC"), ("FDIC", "FDIC"), ("FRB", "FED"), ("OTS", None), ("", None)]
)
def test_regulator_mapping(code: str, expected: str | None) -> None:
    assert fdic.parse_institution({"REGAGNT": code}).regulator == expected


@pytest.mark.parametrize("row", [{"REGAGNT": "NCUA"}, {"BKCLASS": "CU"}, {"CLCODE": 91}, {"CLCODE": "92"}])
def test_credit_unions_are_recognised(row: dict[str, Any]) -> None:
    assert fdic.is_credit_union(row)


# --- upstream failures ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body"),
    [(500, b"{}"), (502, b"<html>Bad Gateway</html>"), (503, b""), (400, b'{"message":"bad filter"}'),
     (404, b"{}"), (200, b"<html>maintenance</html>"), (200, b'{"meta":{"total":3}}'), (200, b"[]")],
)  # fmt: skip
async def test_upstream_failures_are_provider_unavailable(status: int, body: bytes) -> None:
    http, _ = replay(body, status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


@pytest.mark.parametrize(
    "exc",
    [lambda r: httpx.ReadTimeout("t", request=r), lambda r: httpx.ConnectError("refused", request=r)],
)
async def test_timeouts_and_connection_errors_are_provider_unavailable(exc) -> None:
    with pytest.raises(ToolError) as info:
        await call(failing(exc))
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


async def test_429_is_rate_limited() -> None:
    http, _ = replay(b"{}", status=429, headers={"retry-after": "60"})
    with pytest.raises(ToolError) as info:
        await call(http)
    assert info.value.code == "rate_limited" and info.value.details["retry_after"] == 60


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_are_provider_auth(status: int) -> None:
    http, _ = replay(b'{"error":{"code":"API_KEY_INVALID"}}', status=status)
    with pytest.raises(ToolError) as info:
        await call(http)
    assert info.value.code == "provider_auth"


# --- input rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [{"fdic_certificate": None}, {"name": "Bank of Hancock County"}],
)
def test_exactly_one_of_name_or_certificate(fields: dict[str, object]) -> None:
    with pytest.raises(FieldError):
        check(value(**fields))


@pytest.mark.parametrize("name", [" a ", "!!", '""'])
def test_check_refuses_names_without_two_letters_or_digits(name: str) -> None:
    with pytest.raises(FieldError) as info:
        check(value(fdic_certificate=None, name=name))
    assert info.value.field == "name"


@pytest.mark.parametrize(
    "fields",
    [{"fdic_certificate": 0}, {"fdic_certificate": "10057"}, {"name": "x"}, {"name": "x" * 101},
     {"limit": 0}, {"limit": 11}, {"memo_typo": 1}],
)  # fmt: skip
def test_msgspec_refuses_bad_input(fields: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


def test_examples_validate_and_price() -> None:
    for example in COMPANY_BANK_PROFILE.examples:
        check(msgspec.convert(dict(example.input), BankProfileInput, strict=True))
    assert COMPANY_BANK_PROFILE.quote(value()) == 5000  # 0.005 USDC


# --- facts and snapshot --------------------------------------------------------------


async def test_facts_are_keyed_by_certificate() -> None:
    http, _ = replay(cert_body())
    v = value()
    answer = await call(http, v)
    (fact,) = facts(v, answer)
    assert fact.attribute == "company_bank_profile" and fact.key == "10057"
    assert fact.value["total_assets_usd"] == 76_416_000 and fact.value["active"] is True
    assert fact.source == "FDIC" and fact.as_of == "2020-03-31" and fact.public


async def test_answer_snapshot(snapshot) -> None:
    http, _ = replay(cert_body())
    answer = msgspec.to_builtins(await call(http))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    assert answer == snapshot
