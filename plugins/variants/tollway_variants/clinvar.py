"""ClinVar through NCBI E-utilities: find variation IDs, fetch VCV XML, parse it.

Requests go through `EUTILS` (a `tollway.Upstream`: the kernel's `ctx.http`, the
`eutils_api_url` setting, one mapping of upstream failures to `ToolError`s, so the
call is not charged).

Requests (https://www.ncbi.nlm.nih.gov/books/NBK25499/):

- by rsID: `GET {base}/esearch.fcgi?db=clinvar&term=rs17851045&retmode=json&retmax=5`
  -> `{"esearchresult": {"count": "1", "idlist": ["177881"], ...}}` (ClinVar UIDs are
  variation IDs), then the efetch below with those IDs;
- by VCV: the efetch alone, with the accession's number:
  `GET {base}/efetch.fcgi?db=clinvar&rettype=vcv&is_variationid=true&id=177881[,...]`
  -> VCV XML, one `VariationArchive` per record, always the current version.
"""

from __future__ import annotations

import datetime as _dt
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tollway import ToolContext, Upstream

SOURCE = "ClinVar"
EUTILS = Upstream(
    family="variants",
    name="eutils",
    label="NCBI E-utilities",
    default_base_url="https://eutils.ncbi.nlm.nih.gov/entrez/eutils",
    description="Base URL of NCBI E-utilities (or a mirror / local replay server serving the same paths).",
    timeout_s=20.0,
)
PAGE_URL = "https://www.ncbi.nlm.nih.gov/clinvar/variation/{id}/"
MAX_VARIANTS = 5
# NCBI asks every E-utilities program to name itself with `tool`.
TOOL_PARAM = "tollway"

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
CLASSIFICATION_TAGS = {
    "germline": "GermlineClassification",
    "somatic_clinical_impact": "SomaticClinicalImpact",
    "oncogenicity": "OncogenicityClassification",
}


class ConditionId(msgspec.Struct):
    source: str
    id: str


class Condition(msgspec.Struct):
    name: str | None
    ids: list[ConditionId]


class Classification(msgspec.Struct):
    classification: str
    review_status: str | None
    last_evaluated: str | None  # YYYY-MM-DD
    conditions: list[Condition]


class Gene(msgspec.Struct):
    symbol: str | None
    gene_id: int | None


class Variant(msgspec.Struct):
    vcv: str
    version: str
    title: str | None
    variant_type: str | None
    genes: list[Gene]
    protein_change: str | None
    molecular_consequences: list[str]
    rsid: str | None
    page_url: str
    germline: Classification | None
    somatic_clinical_impact: Classification | None
    oncogenicity: Classification | None


@dataclass
class Lookup:
    variants: list[Variant] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)


# --- parsing ---------------------------------------------------------------------


def valid_date(value: str | None) -> str | None:
    """A real calendar YYYY-MM-DD (from 1900 on), else None (ClinVar has placeholders)."""
    if not value:
        return None
    m = _DATE.match(value.strip())
    if not m:
        return None
    try:
        day = _dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None
    return day.isoformat() if day.year >= 1900 else None


def _text(el: ET.Element | None) -> str | None:
    if el is None or el.text is None:
        return None
    text = " ".join(el.text.split())
    return text or None


def _unique(items: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for item in items:
        key = repr(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _conditions(el: ET.Element) -> list[Condition]:
    out = []
    for trait in el.findall("ConditionList/TraitSet/Trait"):
        name = _text(trait.find("Name/ElementValue[@Type='Preferred']"))
        ids = _unique(
            [
                ConditionId(source=x.get("DB"), id=x.get("ID"))
                for x in trait.findall("XRef")
                if x.get("DB") and x.get("ID")
            ]
        )
        if name or ids:
            out.append(Condition(name=name, ids=ids))
    return _unique(out)


def _classification(classifications: ET.Element | None, tag: str) -> Classification | None:
    el = classifications.find(tag) if classifications is not None else None
    if el is None:
        return None
    description = _text(el.find("Description"))
    if description is None:
        return None
    return Classification(
        classification=description,
        review_status=_text(el.find("ReviewStatus")),
        last_evaluated=valid_date(el.get("DateLastEvaluated")),
        conditions=_conditions(el),
    )


def parse_archive(archive: ET.Element) -> tuple[int, Variant] | None:
    """One `VariationArchive` -> its variation ID and its Variant (docs/variants.md), or None
    if it is not readable."""
    accession = (archive.get("Accession") or "").strip()
    version = (archive.get("Version") or "").strip()
    variation_id = (archive.get("VariationID") or "").strip()
    if not accession or not version.isdigit() or not variation_id.isdigit():
        return None
    record = archive.find("ClassifiedRecord")
    if record is None:
        record = archive.find("IncludedRecord")
    variant = None
    if record is not None:
        variant = next((c for c in record if c.tag in ("SimpleAllele", "Haplotype", "Genotype")), None)
    alleles = list(variant.iter("SimpleAllele")) if variant is not None else []

    genes: list[Gene] = []
    proteins: list[str] = []
    consequences: list[str] = []
    rsids: list[str] = []
    if variant is not None:
        for gene in variant.iter("Gene"):
            gid = (gene.get("GeneID") or "").strip()
            symbol = (gene.get("Symbol") or "").strip() or None
            if gid.isdigit() or symbol:
                genes.append(Gene(symbol=symbol, gene_id=int(gid) if gid.isdigit() else None))
        for mc in variant.iter("MolecularConsequence"):
            if mc.get("Type"):
                consequences.append(mc.get("Type").strip())
    for allele in alleles:
        proteins += [t for t in (_text(p) for p in allele.findall("ProteinChange")) if t]
        rsids += [
            "rs" + x.get("ID").strip()
            for x in allele.findall("XRefList/XRef")
            if x.get("DB") == "dbSNP" and x.get("Type") == "rs" and (x.get("ID") or "").strip().isdigit()
        ]
    # A gene named twice (once with its ID, once without) is kept once, with its ID.
    with_id = {g.symbol for g in genes if g.gene_id is not None}
    genes = _unique([g for g in genes if g.gene_id is not None or g.symbol not in with_id])
    rsids = _unique(rsids)
    classifications = record.find("Classifications") if record is not None else None
    return int(variation_id), Variant(
        vcv=accession,
        version=f"{accession}.{version}",
        title=(archive.get("VariationName") or "").strip() or None,
        variant_type=(archive.get("VariationType") or "").strip() or None,
        genes=genes,
        protein_change=", ".join(_unique(proteins)) or None,
        molecular_consequences=_unique(consequences),
        # One rsID per variant; a haplotype or genotype of several alleles has none of its own.
        rsid=rsids[0] if len(rsids) == 1 else None,
        page_url=PAGE_URL.format(id=int(variation_id)),
        germline=_classification(classifications, CLASSIFICATION_TAGS["germline"]),
        somatic_clinical_impact=_classification(classifications, CLASSIFICATION_TAGS["somatic_clinical_impact"]),
        oncogenicity=_classification(classifications, CLASSIFICATION_TAGS["oncogenicity"]),
    )


def parse_vcv_xml(content: bytes) -> dict[int, Variant]:
    """VCV XML (efetch's `ClinVarResult-Set` or a release file's wrapper) -> variants by
    variation ID, in document order.

    A well-formed document without any `VariationArchive` is "no such record".
    """
    try:
        root = ET.fromstring(content)
    except ET.ParseError as exc:
        raise EUTILS.unavailable("ClinVar answered with something other than XML.") from exc
    out: dict[int, Variant] = {}
    for archive in root.iter("VariationArchive"):
        parsed = parse_archive(archive)
        if parsed is not None:
            out[parsed[0]] = parsed[1]
    return out


def parse_esearch(body: Any) -> list[int]:
    result = body.get("esearchresult") if isinstance(body, Mapping) else None
    if not isinstance(result, Mapping) or "ERROR" in result:
        raise EUTILS.unavailable("ClinVar search answered without a result.")
    ids = result.get("idlist")
    if not isinstance(ids, list):
        raise EUTILS.unavailable("ClinVar search answered without an id list.")
    return _unique([int(i) for i in ids if isinstance(i, str) and i.strip().isdigit() and int(i) > 0])


# --- requests --------------------------------------------------------------------


async def fetch_variants(ctx: ToolContext, ids: list[int], calls: list[str]) -> list[Variant]:
    params = {
        "db": "clinvar",
        "rettype": "vcv",
        "is_variationid": "true",
        "id": ",".join(str(i) for i in ids),
        "tool": TOOL_PARAM,
    }
    reply = EUTILS.check(await EUTILS.send(ctx, "/efetch.fcgi", params=params, calls=calls))
    by_id = parse_vcv_xml(reply.content)
    # Our order (the search's), and only the records asked for.
    return [by_id[i] for i in ids if i in by_id]


async def by_vcv(ctx: ToolContext, variation_id: int) -> Lookup:
    out = Lookup()
    out.variants = await fetch_variants(ctx, [variation_id], out.calls)
    return out


async def by_rsid(ctx: ToolContext, rsid: str) -> Lookup:
    out = Lookup()
    params = {"db": "clinvar", "term": rsid, "retmode": "json", "retmax": str(MAX_VARIANTS), "tool": TOOL_PARAM}
    body = await EUTILS.get_json(ctx, "/esearch.fcgi", params=params, calls=out.calls)
    ids = parse_esearch(body)[:MAX_VARIANTS]
    if ids:
        out.variants = await fetch_variants(ctx, ids, out.calls)
    return out
