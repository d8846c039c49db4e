"""The `variant_clinical_significance` tool: input/output types, checks and run."""

from __future__ import annotations

import re
from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Fact, FieldError, Tool, ToolContext

from . import clinvar
from .clinvar import Classification, Variant

SOURCE = clinvar.SOURCE  # ClinVar, run by NCBI (US National Library of Medicine)
SOURCE_KIND = "public"

_VCV = re.compile(r"^\s*VCV(\d{1,9})(?:\.(\d{1,4}))?\s*$", re.IGNORECASE)

Vcv = Annotated[
    str,
    Meta(
        min_length=4,
        max_length=24,
        pattern=r"^\s*[Vv][Cc][Vv][0-9]{1,9}(\.[0-9]{1,4})?\s*$",
        description="ClinVar variation accession, e.g. VCV000177881 or VCV000177881.29 (a version names its base accession).",
        examples=["VCV000177881"],
    ),
]
RsId = Annotated[
    str,
    Meta(
        min_length=3,
        max_length=16,
        pattern=r"^\s*[Rr][Ss][1-9][0-9]{0,11}\s*$",
        description="dbSNP reference SNP id, e.g. rs17851045.",
        examples=["rs17851045"],
    ),
]


class VariantInput(msgspec.Struct, forbid_unknown_fields=True):
    """Exactly one of `vcv`, `rsid`. Never a person's genome or a VCF file."""

    vcv: Vcv | None = None
    rsid: RsId | None = None


class VariantResult(msgspec.Struct):
    variants: list[Variant]


class VariantAnswer(msgspec.Struct):
    result: VariantResult
    # as_of: the latest valid last_evaluated across every returned classification;
    # calls: one per E-utilities request, in order.
    evidence: Evidence


def check(value: VariantInput) -> None:
    given = [f for f in ("vcv", "rsid") if getattr(value, f) is not None]
    if not given:
        raise FieldError("vcv", "Give exactly one of vcv or rsid")
    if len(given) > 1:
        raise FieldError("rsid", "Give exactly one of vcv or rsid, not both")
    if value.vcv is not None:
        m = _VCV.match(value.vcv)
        if not m or int(m[1]) == 0:
            raise FieldError("vcv", "Expected a ClinVar accession such as VCV000177881 or VCV000177881.29")


def variation_id(vcv: str) -> int:
    """`VCV000177881.3` -> 177881 (the version only names the base accession)."""
    m = _VCV.match(vcv)
    assert m is not None
    return int(m[1])


def latest_evaluated(variants: list[Variant]) -> str | None:
    dates = [
        c.last_evaluated
        for v in variants
        for c in (v.germline, v.somatic_clinical_impact, v.oncogenicity)
        if c is not None and c.last_evaluated
    ]
    return max(dates) if dates else None


async def run(value: VariantInput, ctx: ToolContext) -> VariantAnswer:
    if value.vcv is not None:
        found = await clinvar.by_vcv(ctx, variation_id(value.vcv))
    else:
        assert value.rsid is not None
        found = await clinvar.by_rsid(ctx, value.rsid.strip().lower())
    variants = found.variants[: clinvar.MAX_VARIANTS]
    return VariantAnswer(
        result=VariantResult(variants=variants),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=latest_evaluated(variants), calls=found.calls),
    )


def _summary(c: Classification | None) -> dict[str, str | None] | None:
    if c is None:
        return None
    return {"classification": c.classification, "review_status": c.review_status, "last_evaluated": c.last_evaluated}


def facts(value: VariantInput, answer: VariantAnswer) -> list[Fact]:
    """One fact per returned variant, keyed by its base VCV accession."""
    return [
        Fact(
            attribute="variant_clinical_significance",
            key=v.vcv,
            value={
                "version": v.version,
                "germline": _summary(v.germline),
                "somatic_clinical_impact": _summary(v.somatic_clinical_impact),
                "oncogenicity": _summary(v.oncogenicity),
            },
            source=answer.evidence.source,
            as_of=latest_evaluated([v]),
        )
        for v in answer.result.variants
    ]


VARIANT_CLINICAL_SIGNIFICANCE = Tool(
    name="variant_clinical_significance",
    path="/v1/tools/lookup/variant-clinical-significance",
    title="Variant clinical significance",
    summary="ClinVar's classifications (germline, somatic impact, oncogenicity) of a genetic variant, by VCV accession or rsID.",
    description=(
        "ClinVar's aggregate classifications of a genetic variant, by ClinVar accession (VCV) or dbSNP rsID: "
        "up to five variants, each with its current version, genes, protein change, molecular consequences and "
        "the germline, somatic clinical impact and oncogenicity classifications (review status, date last "
        "evaluated, conditions). Never a person's genome or a VCF file. Not medical advice."
    ),
    category="data",
    subcategory="variant_clinical_significance",
    input_type=VariantInput,
    output_type=VariantAnswer,
    run=run,
    price="0.01",
    family="variants",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(title="A KRAS variant by accession", input={"vcv": "VCV000177881"}),
        Example(title="The same variant by rsID", input={"rsid": "rs17851045"}),
    ),
    check=check,
    exactly_one_of=(("vcv", "rsid"),),
    facts=facts,
)
