"""Tests for `variant_clinical_significance`, replaying ClinVar's real VCV XML records.

Recorded (see `fixtures/README.md`): real VCV records in the current ClinVar XML
format (`VariationArchive`, the element efetch `rettype=vcv` returns), saved inside a
release file's `ClinVarVariationRelease` wrapper; efetch wraps the same element in
`ClinVarResult-Set`. The parser reads `VariationArchive` under either wrapper, so the
recorded files are served unchanged as efetch answers.

Not recorded: an esearch JSON answer, a multi-record efetch answer and an empty one.
Those fixtures are built from the documented formats (E-utilities, NBK25499): esearch
`{"header": {...}, "esearchresult": {"count", "retmax", "retstart", "idlist": [...]}}`;
a multi-record efetch answer is the recorded `VariationArchive` elements, byte for byte,
inside `<ClinVarResult-Set>`; an empty one is `<ClinVarResult-Set/>`.

Every handler asserts the exact URL and query E-utilities would receive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_variants import clinvar
from tollway_variants.tool import (
    VARIANT_CLINICAL_SIGNIFICANCE,
    VariantAnswer,
    VariantInput,
    check,
    facts,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # recorded answers, see fixtures/README.md
VCV = FIXTURES / "clinvar" / "vcv_xml"

BASE = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
EFETCH = f"{BASE}/efetch.fcgi"
ESEARCH = f"{BASE}/esearch.fcgi"


def recorded(accession: str) -> bytes:
    return (VCV / f"{accession}.xml").read_bytes()


def archive_bytes(accession: str) -> bytes:
    raw = recorded(accession)
    start = raw.index(b"<VariationArchive ")
    end = raw.index(b"</VariationArchive>") + len(b"</VariationArchive>")
    return raw[start:end]


def result_set(*accessions: str) -> bytes:
    # Built from the documented efetch format around recorded records (see module docstring).
    return (
        b'<?xml version="1.0" ?>\n<ClinVarResult-Set>\n'
        + b"\n".join(archive_bytes(a) for a in accessions)
        + b"\n</ClinVarResult-Set>\n"
    )


EMPTY_SET = b'<?xml version="1.0" ?>\n<ClinVarResult-Set/>\n'  # documented shape; no recording


def esearch_body(*ids: int, term: str) -> bytes:
    # Built from the documented esearch JSON format (no recording exists).
    return msgspec.json.encode(
        {
            "header": {"type": "esearch", "version": "0.3"},
            "esearchresult": {
                "count": str(len(ids)),
                "retmax": str(len(ids)),
                "retstart": "0",
                "idlist": [str(i) for i in ids],
                "translationset": [],
                "querytranslation": f"{term}[All Fields]",
            },
        }
    )


def efetch_query(*ids: int) -> dict[str, str]:
    return {
        "db": "clinvar",
        "rettype": "vcv",
        "is_variationid": "true",
        "id": ",".join(map(str, ids)),
        "tool": "tollway",
    }


def esearch_query(term: str) -> dict[str, str]:
    return {"db": "clinvar", "term": term, "retmode": "json", "retmax": "5", "tool": "tollway"}


Step = tuple[str, dict[str, str], int, bytes]


def replay(*steps: Step, headers: dict[str, str] | None = None) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(steps)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        assert queue, f"unexpected extra request {request.url}"
        url, query, status, body = queue.pop(0)
        assert request.method == "GET"
        assert str(request.url.copy_with(query=None)) == url
        assert dict(request.url.params) == query
        return httpx.Response(status, content=body, headers=headers or {})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler)), seen


def failing(exc: Callable[[httpx.Request], Exception]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def value(**fields: object) -> VariantInput:
    return msgspec.convert(fields, VariantInput, strict=True)


async def call(http: httpx.AsyncClient, v: VariantInput, **settings: str) -> VariantAnswer:
    async with http:
        return await VARIANT_CLINICAL_SIGNIFICANCE.run(
            v, ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)
        )


def by_vcv(accession: str, variation_id: int) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    return replay((EFETCH, efetch_query(variation_id), 200, recorded(accession)))


# --- recorded records -------------------------------------------------------------


async def test_germline_single_submitter_without_date() -> None:
    http, seen = by_vcv("VCV000000002", 2)
    answer = await call(http, value(vcv="VCV000000002"))
    assert len(seen) == 1
    (v,) = answer.result.variants
    assert (v.vcv, v.version, v.variant_type) == ("VCV000000002", "VCV000000002.3", "Indel")
    assert v.title == "NM_014855.3(AP5Z1):c.80_83delinsTGCTGTAAACTGTAACTGTAAA (p.Arg27_Ile28delinsLeuLeuTer)"
    assert [(g.symbol, g.gene_id) for g in v.genes] == [("AP5Z1", 9907)]
    assert v.rsid == "rs397704705" and v.protein_change is None
    assert "nonsense" in v.molecular_consequences
    assert v.page_url == "https://www.ncbi.nlm.nih.gov/clinvar/variation/2/"
    g = v.germline
    assert (g.classification, g.review_status, g.last_evaluated) == (
        "Pathogenic",
        "criteria provided, single submitter",
        None,
    )
    (cond,) = g.conditions
    assert cond.name == "Hereditary spastic paraplegia 48"
    assert ("OMIM", "613647") in [(i.source, i.id) for i in cond.ids]
    assert v.somatic_clinical_impact is None and v.oncogenicity is None
    assert answer.evidence.as_of is None  # the one classification has no date
    assert (answer.evidence.source, answer.evidence.source_kind) == ("ClinVar", "public")
    assert len(answer.evidence.calls) == 1


async def test_versioned_accession_names_base_and_reports_current_version() -> None:
    http, _ = by_vcv("VCV000177881", 177881)
    answer = await call(http, value(vcv=" vcv000177881.2 "))
    (v,) = answer.result.variants
    assert v.version == "VCV000177881.29"
    assert v.germline.classification == "Conflicting classifications of pathogenicity"
    assert v.germline.review_status == "criteria provided, conflicting classifications"
    assert v.germline.last_evaluated == "2022-10-10"
    assert (v.oncogenicity.classification, v.oncogenicity.last_evaluated) == ("Oncogenic", "2024-07-31")
    assert v.somatic_clinical_impact.classification == "Tier II - Potential"
    assert v.protein_change == "Q61H" and v.rsid == "rs17851045"
    assert [(g.symbol, g.gene_id) for g in v.genes] == [("KRAS", 3845)]
    assert answer.evidence.as_of == "2024-07-31"


async def test_somatic_clinical_impact_and_deduplicated_conditions() -> None:
    http, _ = by_vcv("VCV000097006", 97006)
    answer = await call(http, value(vcv="VCV000097006"))
    (v,) = answer.result.variants
    assert v.somatic_clinical_impact.classification == "Tier I - Strong"
    assert v.somatic_clinical_impact.last_evaluated == "2024-01-24"
    assert v.oncogenicity.classification == "Uncertain significance"
    assert [c.name for c in v.germline.conditions] == ["Primary myelofibrosis", "Thrombocythemia 1"]
    assert answer.evidence.as_of == "2024-01-24"


async def test_haplotype_has_both_protein_changes_and_no_single_rsid() -> None:
    http, _ = by_vcv("VCV000040200", 40200)
    (v,) = (await call(http, value(vcv="VCV000040200"))).result.variants
    assert v.variant_type == "Haplotype"
    assert v.protein_change == "Q359K, T360K" and v.rsid is None
    assert [(g.symbol, g.gene_id) for g in v.genes] == [("CFTR", 1080)]
    assert v.germline.review_status == "reviewed by expert panel"


async def test_rsid_search_then_fetch_in_search_order() -> None:
    http, seen = replay(
        (ESEARCH, esearch_query("rs17851045"), 200, esearch_body(177881, 97006, term="rs17851045")),
        (EFETCH, efetch_query(177881, 97006), 200, result_set("VCV000097006", "VCV000177881")),
    )
    answer = await call(http, value(rsid="RS17851045"))
    assert [v.vcv for v in answer.result.variants] == ["VCV000177881", "VCV000097006"]
    assert len(answer.evidence.calls) == 2 and len(seen) == 2
    assert answer.evidence.as_of == "2024-07-31"


async def test_rsid_without_match_is_empty_after_one_call() -> None:
    http, seen = replay((ESEARCH, esearch_query("rs1"), 200, esearch_body(term="rs1")))
    answer = await call(http, value(rsid="rs1"))
    assert answer.result.variants == [] and answer.evidence.as_of is None
    assert len(seen) == 1 and len(answer.evidence.calls) == 1


async def test_unknown_vcv_is_empty() -> None:
    http, _ = replay((EFETCH, efetch_query(999999999), 200, EMPTY_SET))
    answer = await call(http, value(vcv="VCV999999999"))
    assert answer.result.variants == []


async def test_base_url_setting_and_environment(kernel_factory) -> None:
    http, seen = replay(("http://127.0.0.1:8099/eutils/efetch.fcgi", efetch_query(2), 200, recorded("VCV000000002")))
    await call(http, value(vcv="VCV000000002"), eutils_api_url="http://127.0.0.1:8099/eutils/")
    assert len(seen) == 1
    kernel = await kernel_factory(
        installed={"tollway_variants"}, env={"TOLLWAY_VARIANTS_EUTILS_API_URL": "http://mirror.test"}
    )
    http, seen = replay(("http://mirror.test/efetch.fcgi", efetch_query(2), 200, recorded("VCV000000002")))
    await call(http, value(vcv="VCV000000002"), **kernel.family_settings("variants"))
    assert len(seen) == 1


@pytest.mark.parametrize(
    "accession",
    ["VCV000000002", "VCV000000032", "VCV000040200", "VCV001264328", "VCV000424711", "VCV000097006", "VCV000177881"],
)
def test_every_recorded_record_parses(accession: str) -> None:
    (v,) = clinvar.parse_vcv_xml(recorded(accession)).values()
    assert v.vcv == accession and v.germline is not None and v.genes


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-07-31", "2024-07-31"),
        ("1/01/01 00:00", None),
        ("0001-01-01", None),
        ("2024-02-30", None),
        ("", None),
        (None, None),
    ],
)
def test_valid_date(raw: str | None, expected: str | None) -> None:
    assert clinvar.valid_date(raw) == expected


# --- failures --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (429, b'{"error":"API rate limit exceeded","count":"4"}', "rate_limited"),
        (500, b"<html>Internal Server Error</html>", "provider_unavailable"),
        (502, b"", "provider_unavailable"),
        (400, b"<eFetchResult><ERROR>Invalid parameters</ERROR></eFetchResult>", "provider_unavailable"),
        (401, b"", "provider_auth"),
        (403, b"<html>Forbidden</html>", "provider_auth"),
        (200, b"<html>maintenance", "provider_unavailable"),
    ],
)
async def test_efetch_failures(status: int, body: bytes, code: str) -> None:
    http, _ = replay((EFETCH, efetch_query(2), status, body), headers={"retry-after": "2"})
    with pytest.raises(ToolError) as info:
        await call(http, value(vcv="VCV000000002"))
    assert (info.value.code, info.value.status) == (code, 503)


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"esearchresult": {"ERROR": "Invalid db name specified: clinvar"}}', b'{"header": {}}', b"[]"],
)
async def test_esearch_bad_answers_are_provider_unavailable(body: bytes) -> None:
    http, _ = replay((ESEARCH, esearch_query("rs2"), 200, body))
    with pytest.raises(ToolError) as info:
        await call(http, value(rsid="rs2"))
    assert info.value.code == "provider_unavailable"


async def test_timeout_is_provider_unavailable() -> None:
    with pytest.raises(ToolError) as info:
        await call(failing(lambda r: httpx.ReadTimeout("t", request=r)), value(rsid="rs2"))
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)


# --- input rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [({}, "vcv"), ({"vcv": "VCV000000002", "rsid": "rs2"}, "rsid"), ({"vcv": "VCV000000000"}, "vcv")],
)
def test_check_refuses(fields: dict[str, object], field: str) -> None:
    with pytest.raises(FieldError) as info:
        check(value(**fields))
    assert info.value.field == field


@pytest.mark.parametrize(
    "fields",
    [
        {"vcv": "RCV000000002"},
        {"vcv": "VCV"},
        {"vcv": "VCV0000000021234"},
        {"vcv": "VCV2.x"},
        {"rsid": "rs"},
        {"rsid": "rs0"},
        {"rsid": "17851045"},
        {"rsid": "rs1234567890123"},
        {"vcf": "chr1 123 A G"},
        {"vcv": 2},
    ],
)
def test_msgspec_refuses_bad_input(fields: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        value(**fields)


def test_examples_validate_pass_check_and_price() -> None:
    for example in VARIANT_CLINICAL_SIGNIFICANCE.examples:
        check(msgspec.convert(dict(example.input), VariantInput, strict=True))
    assert VARIANT_CLINICAL_SIGNIFICANCE.quote(value(vcv="VCV000177881")) == 10000  # 0.01 USDC


# --- snapshot and facts ----------------------------------------------------------------


async def test_answer_snapshot(snapshot) -> None:
    http, _ = by_vcv("VCV000177881", 177881)
    answer = msgspec.to_builtins(await call(http, value(vcv="VCV000177881")))
    answer["evidence"]["retrieved_at"] = "<retrieved_at>"
    answer["evidence"]["calls"] = [{"retrieved_at": "<retrieved_at>"} for _ in answer["evidence"]["calls"]]
    assert answer == snapshot


async def test_facts_keyed_by_vcv_accession() -> None:
    http, _ = by_vcv("VCV000097006", 97006)
    v = value(vcv="VCV000097006.1")
    (fact,) = facts(v, await call(http, v))
    assert (fact.attribute, fact.key, fact.source, fact.as_of) == (
        "variant_clinical_significance",
        "VCV000097006",
        "ClinVar",
        "2024-01-24",
    )
    assert fact.value["version"] == "VCV000097006.3"
    assert fact.value["germline"]["classification"] == "Pathogenic"
    assert fact.value["somatic_clinical_impact"]["classification"] == "Tier I - Strong"
