"""Tests for `compound_resolve`, replaying PubChem's recorded answers.

Recorded (see `fixtures/README.md`): `property_all_cid_5564_2244.json`, the
real PUG REST property answer for CIDs 5564 (triclosan) and 2244 (aspirin), recorded for
a `POST .../compound/cid/property/<all properties>/JSON` with `cid=5564,2244` in the body.
Our client asks for four of those properties with the same CID body; the recorded answer
(a superset of what we ask) is served unchanged.

Not recorded: the `compound/<ns>/cids/JSON` answer and PubChem's not-found fault. Those
fixtures below are built from PubChem's documented format (PUG REST documentation,
https://pubchem.ncbi.nlm.nih.gov/docs/pug-rest, and the shapes `fixtures/README.md` quotes):
`{"IdentifierList": {"CID": [...]}}` and, with HTTP 404,
`{"Fault": {"Code": "PUGREST.NotFound", "Message": "No CID found", ...}}`.

Every handler asserts the exact method, URL and form body PubChem would receive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_chemistry import pubchem
from tollway_chemistry.tool import (
    COMPOUND_RESOLVE,
    CompoundAnswer,
    CompoundResolveInput,
    check,
    facts,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded answers, see fixtures/README.md
PROPS_5564_2244 = (FIXTURES / "pubchem" / "property_all_cid_5564_2244.json").read_bytes()

BASE = "https://pubchem.ncbi.nlm.nih.gov/rest/pug"
PROPERTY_URL = f"{BASE}/compound/cid/property/MolecularFormula,IUPACName,InChIKey,IsomericSMILES/JSON"


def cids_body(*cids: int) -> bytes:
    # Built from the documented format (no recording exists): see the module docstring.
    return msgspec.json.encode({"IdentifierList": {"CID": list(cids)}})


# Built from the documented format (no recording exists): PUG REST's no-match fault.
NOT_FOUND = msgspec.json.encode(
    {
        "Fault": {
            "Code": "PUGREST.NotFound",
            "Message": "No CID found",
            "Details": ["No CID found that matches the given name"],
        }
    }
)


def props_for(*cids: int) -> bytes:
    """The recorded property answer cut down to some of its rows (same rows, same bytes per row)."""
    rows = msgspec.json.decode(PROPS_5564_2244)["PropertyTable"]["Properties"]
    return msgspec.json.encode({"PropertyTable": {"Properties": [r for r in rows if r["CID"] in cids]}})


Step = tuple[str, dict[str, str], int, bytes]


def replay(*steps: Step, headers: dict[str, str] | None = None) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """A client answering each expected (url, form) in turn with (status, body)."""
    seen: list[httpx.Request] = []
    queue = list(steps)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert queue, f"unexpected extra request {request.url}"
        url, form, status, body = queue.pop(0)
        assert request.method == "POST"
        assert str(request.url) == url
        assert request.headers["content-type"] == "application/x-www-form-urlencoded"
        assert dict(parse_qsl(request.content.decode())) == form
        return httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def failing(exc: Callable[[httpx.Request], Exception]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def value(**fields: object) -> CompoundResolveInput:
    return msgspec.convert(fields, CompoundResolveInput, strict=True)


async def call(http: httpx.AsyncClient, v: CompoundResolveInput, **settings: str) -> CompoundAnswer:
    async with http:
        return await COMPOUND_RESOLVE.run(
            v, ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)
        )


def two_matches(ns: str = "name", ident: str = "triclosan", props_cids: str = "5564,2244") -> tuple[Step, Step]:
    # Two CIDs in this order so the recorded property answer (for exactly 5564,2244) replays as is.
    return (
        (f"{BASE}/compound/{ns}/cids/JSON", {ns: ident}, 200, cids_body(5564, 2244)),
        (PROPERTY_URL, {"cid": props_cids}, 200, PROPS_5564_2244 if props_cids == "5564,2244" else props_for(5564)),
    )


# --- recorded answers ------------------------------------------------------------


async def test_two_matches_in_source_order_with_all_fields() -> None:
    http, seen = replay(*two_matches())
    answer = await call(http, value(name="triclosan"))
    assert len(seen) == 2
    first, second = answer.result.matches
    assert (first.cid, second.cid) == (5564, 2244)
    assert first.inchikey == "XEFQLINVKFYRCS-UHFFFAOYSA-N"
    assert first.iupac_name == "5-chloro-2-(2,4-dichlorophenoxy)phenol"
    assert first.molecular_formula == "C12H7Cl3O2"
    assert second.inchikey == "BSYNRYMUTXBXSQ-UHFFFAOYSA-N"
    assert second.smiles == "CC(=O)OC1=CC=CC=C1C(=O)O"
    assert second.iupac_name == "2-acetyloxybenzoic acid"
    assert second.page_url == "https://pubchem.ncbi.nlm.nih.gov/compound/2244"
    assert answer.result.ambiguous is True
    ev = answer.evidence
    assert (ev.source, ev.source_kind, ev.as_of) == ("PubChem", "public", None)
    assert len(ev.calls) == 2 and all(c.retrieved_at.endswith("Z") for c in ev.calls)


async def test_limit_one_still_reports_ambiguous_and_fetches_one() -> None:
    http, seen = replay(*two_matches(props_cids="5564"))
    answer = await call(http, value(name="triclosan", limit=1))
    assert len(seen) == 2  # the property request asks for the first CID only
    assert [m.cid for m in answer.result.matches] == [5564]
    assert answer.result.ambiguous is True
    assert len(answer.evidence.calls) == 2


async def test_single_match_by_inchikey_is_not_ambiguous() -> None:
    http, _ = replay(
        (f"{BASE}/compound/inchikey/cids/JSON", {"inchikey": "BSYNRYMUTXBXSQ-UHFFFAOYSA-N"}, 200, cids_body(2244)),
        (PROPERTY_URL, {"cid": "2244"}, 200, props_for(2244)),
    )
    answer = await call(http, value(inchikey="bsynrymutxbxsq-uhfffaoysa-n"))
    (match,) = answer.result.matches
    assert match.cid == 2244 and answer.result.ambiguous is False


async def test_smiles_and_cas_number_are_sent_in_the_body_trimmed() -> None:
    smiles = "CC(=O)OC1=CC=CC=C1C(=O)O"
    http, _ = replay(
        (f"{BASE}/compound/smiles/cids/JSON", {"smiles": smiles}, 200, cids_body(2244)),
        (PROPERTY_URL, {"cid": "2244"}, 200, props_for(2244)),
    )
    assert (await call(http, value(smiles=f" {smiles} "))).result.matches[0].cid == 2244
    http, _ = replay(
        (f"{BASE}/compound/name/cids/JSON", {"name": "50-78-2"}, 200, cids_body(2244)),
        (PROPERTY_URL, {"cid": "2244"}, 200, props_for(2244)),
    )
    assert (await call(http, value(name="50-78-2"))).result.matches[0].cid == 2244


async def test_not_found_fault_is_an_empty_answer_with_one_call() -> None:
    http, seen = replay((f"{BASE}/compound/name/cids/JSON", {"name": "no such compound"}, 404, NOT_FOUND))
    answer = await call(http, value(name="no  such compound"))
    assert answer.result.matches == [] and answer.result.ambiguous is False
    assert len(seen) == 1 and len(answer.evidence.calls) == 1


async def test_cid_zero_means_no_match() -> None:
    http, seen = replay((f"{BASE}/compound/smiles/cids/JSON", {"smiles": "C[Xe]"}, 200, cids_body(0)))
    answer = await call(http, value(smiles="C[Xe]"))
    assert answer.result.matches == [] and len(seen) == 1


async def test_base_url_setting_and_environment() -> None:
    mirror = "http://127.0.0.1:8099/pug"
    http, seen = replay(
        (f"{mirror}/compound/name/cids/JSON", {"name": "triclosan"}, 200, cids_body(5564, 2244)),
        (PROPERTY_URL.replace(BASE, mirror), {"cid": "5564,2244"}, 200, PROPS_5564_2244),
    )
    await call(http, value(name="triclosan"), pubchem_api_url=mirror + "/")
    assert len(seen) == 2


async def test_base_url_from_the_environment_through_the_kernel(kernel_factory) -> None:
    kernel = await kernel_factory(
        installed={"tollway_chemistry"}, env={"TOLLWAY_CHEMISTRY_PUBCHEM_API_URL": "http://mirror.test"}
    )
    http, seen = replay(("http://mirror.test/compound/name/cids/JSON", {"name": "zz"}, 404, NOT_FOUND))
    await call(http, value(name="zz"), **kernel.family_settings("chemistry"))
    assert len(seen) == 1


def test_new_smiles_property_names_are_read() -> None:
    body = {
        "PropertyTable": {
            "Properties": [
                {
                    "CID": 2244,
                    "MolecularFormula": "C9H8O4",
                    "SMILES": "CC(=O)OC1=CC=CC=C1C(=O)O",
                    "ConnectivitySMILES": "CC(=O)OC1=CC=CC=C1C(=O)O",
                    "InChIKey": "BSYNRYMUTXBXSQ-UHFFFAOYSA-N",
                }
            ]
        }
    }
    compound = pubchem.parse_properties(body)[2244]
    assert compound.smiles == "CC(=O)OC1=CC=CC=C1C(=O)O"
    assert compound.iupac_name is None


# --- failures --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "code", "http_status"),
    [
        (
            503,
            b'{"Fault":{"Code":"PUGREST.ServerBusy","Message":"Too many requests or server too busy"}}',
            "rate_limited",
            503,
        ),
        (429, b"Too Many Requests", "rate_limited", 503),
        (504, b'{"Fault":{"Code":"PUGREST.Timeout","Message":"Request timed out"}}', "provider_unavailable", 503),
        (
            500,
            b'{"Fault":{"Code":"PUGREST.ServerError","Message":"Some problem on the server side"}}',
            "provider_unavailable",
            503,
        ),
        (404, b"<html>Not Found</html>", "provider_unavailable", 503),
        (401, b"Unauthorized", "provider_auth", 503),
        (403, b"Forbidden", "provider_auth", 503),
        (
            400,
            b'{"Fault":{"Code":"PUGREST.BadRequest","Message":"Unable to standardize the given structure"}}',
            "invalid_input",
            400,
        ),
        (200, b"<html>maintenance</html>", "provider_unavailable", 503),
        (200, b'{"InformationList": {}}', "provider_unavailable", 503),
    ],
)
async def test_upstream_failures(status: int, body: bytes, code: str, http_status: int) -> None:
    http, _ = replay(
        (f"{BASE}/compound/smiles/cids/JSON", {"smiles": "CC"}, status, body), headers={"retry-after": "5"}
    )
    with pytest.raises(ToolError) as info:
        await call(http, value(smiles="CC"))
    assert (info.value.code, info.value.status) == (code, http_status)


async def test_property_call_failure_is_provider_unavailable() -> None:
    http, _ = replay(
        (f"{BASE}/compound/name/cids/JSON", {"name": "triclosan"}, 200, cids_body(5564, 2244)),
        (PROPERTY_URL, {"cid": "5564,2244"}, 502, b"Bad Gateway"),
    )
    with pytest.raises(ToolError) as info:
        await call(http, value(name="triclosan"))
    assert info.value.code == "provider_unavailable"


@pytest.mark.parametrize(
    "exc", [lambda r: httpx.ReadTimeout("t", request=r), lambda r: httpx.ConnectError("x", request=r)]
)
async def test_timeouts_and_connection_errors(exc) -> None:
    with pytest.raises(ToolError) as info:
        await call(failing(exc), value(name="aspirin"))
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


# --- input rules ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "name"),
        ({"limit": 3}, "name"),
        ({"name": "aspirin", "smiles": "CC"}, "smiles"),
        ({"name": "aspirin", "inchikey": "BSYNRYMUTXBXSQ-UHFFFAOYSA-N"}, "inchikey"),
        ({"name": " a "}, "name"),
        ({"inchikey": "BSYNRYMUTXBXSQ_UHFFFAOYSA_N"}, "inchikey"),
        ({"inchikey": "BSYNRYMUTXBXSQ-UHFFFAOYSA-1"}, "inchikey"),
        ({"smiles": "   "}, "smiles"),
    ],
)
def test_check_refuses(fields: dict[str, object], field: str) -> None:
    with pytest.raises(FieldError) as info:
        check(value(**fields))
    assert info.value.field == field


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "a"},
        {"name": "x" * 201},
        {"name": "   "},
        {"inchikey": "BSYNRYMUTXBXSQ-UHFFFAOYSA"},
        {"inchikey": "BSYNRYMUTXBXSQ-UHFFFAOYSA-NX"},
        {"smiles": ""},
        {"smiles": "C" * 501},
        {"smiles": "F/C=C/F"},
        {"smiles": "F\\C=C\\F"},
        {"name": "aspirin", "limit": 0},
        {"name": "aspirin", "limit": 11},
        {"name": "aspirin", "memo_typo": 1},
    ],
)
def test_msgspec_refuses_bad_input(fields: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


def test_examples_validate_pass_check_and_price() -> None:
    for example in COMPOUND_RESOLVE.examples:
        check(msgspec.convert(dict(example.input), CompoundResolveInput, strict=True))
    assert COMPOUND_RESOLVE.quote(value(name="aspirin")) == 5000  # 0.005 USDC
    assert value(name="aspirin").limit == 5


# --- snapshot and facts -------------------------------------------------------------


async def test_answer_snapshot(snapshot) -> None:
    http, _ = replay(*two_matches())
    answer = msgspec.to_builtins(await call(http, value(name="triclosan")))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    answer["evidence"]["calls"] = [{"retrieved_at": "<retrieved_at>"} for _ in answer["evidence"]["calls"]]
    assert answer == snapshot


async def test_facts_keyed_by_cid() -> None:
    http, _ = replay(*two_matches())
    v = value(name="triclosan")
    answer = await call(http, v)
    got = facts(v, answer)
    assert [f.key for f in got] == ["5564", "2244"]
    assert all(f.attribute == "compound_resolve" and f.source == "PubChem" and f.public for f in got)
    assert got[1].value["inchikey"] == "BSYNRYMUTXBXSQ-UHFFFAOYSA-N"
