"""The `compound_resolve` tool: its input/output types, its checks and its run.

Declared once here; the kernel derives the route, MCP tool, schema and price.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Fact, FieldError, Tool, ToolContext

from . import pubchem

SOURCE = pubchem.SOURCE  # PubChem, run by NCBI (US National Library of Medicine)
SOURCE_KIND = "public"
IDENTIFIERS = ("name", "inchikey", "smiles")

Name = Annotated[
    str,
    Meta(
        min_length=2,
        max_length=200,
        pattern=r"\S",
        description="Common, trade or systematic name, or a CAS registry number (2 to 200 characters).",
        examples=["aspirin", "50-78-2"],
    ),
]
InChIKey = Annotated[
    str,
    Meta(
        min_length=27,
        max_length=27,
        description="Standard InChIKey, exactly 27 characters.",
        examples=["BSYNRYMUTXBXSQ-UHFFFAOYSA-N"],
    ),
]
Smiles = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=500,
        pattern=r"^[^/\\]*$",
        description="SMILES, 1 to 500 characters, without a slash or backslash (no bond-direction marks).",
        examples=["CC(=O)OC1=CC=CC=C1C(=O)O"],
    ),
]
Limit = Annotated[int, Meta(ge=1, le=10, description="Most matches to return, 1 to 10 (default 5).")]


class CompoundResolveInput(msgspec.Struct, forbid_unknown_fields=True):
    """Exactly one of `name`, `inchikey`, `smiles`."""

    name: Name | None = None
    inchikey: InChIKey | None = None
    smiles: Smiles | None = None
    limit: Limit = 5


class CompoundMatch(msgspec.Struct):
    """A Compound match (docs/chemistry.md). A property PubChem does not give is null
    (PubChem has no IUPAC name for some large or ill-defined compounds)."""

    cid: int
    iupac_name: str | None
    molecular_formula: str | None
    inchikey: str | None
    smiles: str | None
    page_url: str


class CompoundResult(msgspec.Struct):
    matches: list[CompoundMatch]
    ambiguous: bool  # PubChem matched more than one compound, whatever `limit` returned


class CompoundAnswer(msgspec.Struct):
    result: CompoundResult
    # as_of is always null (PubChem gives no date for a compound record); calls: one
    # per PubChem request, in order.
    evidence: Evidence


def _given(value: CompoundResolveInput) -> list[str]:
    return [f for f in IDENTIFIERS if getattr(value, f) is not None]


def check(value: CompoundResolveInput) -> None:
    """Exactly one identifier; trimmed lengths; InChIKey shape."""
    given = _given(value)
    if not given:
        raise FieldError("name", "Give exactly one of name, inchikey or smiles")
    if len(given) > 1:
        raise FieldError(given[1], f"Give exactly one of name, inchikey or smiles (got {', '.join(given)})")
    if value.name is not None and len(value.name.strip()) < 2:
        raise FieldError("name", "Expected at least 2 characters besides leading and trailing spaces")
    if value.inchikey is not None:
        key = value.inchikey
        parts = key.split("-")
        if not ([len(p) for p in parts] == [14, 10, 1] and all(p.isascii() and p.isalpha() for p in parts)):
            raise FieldError("inchikey", "Expected an InChIKey: 14 letters, '-', 10 letters, '-', 1 letter")
    if value.smiles is not None and not value.smiles.strip():
        raise FieldError("smiles", "Expected a SMILES, not only spaces")


def _query(value: CompoundResolveInput) -> tuple[str, str]:
    """(PUG REST namespace, identifier as sent): trimmed; InChIKey in capitals."""
    if value.inchikey is not None:
        return "inchikey", value.inchikey.strip().upper()
    if value.smiles is not None:
        return "smiles", value.smiles.strip()
    assert value.name is not None
    return "name", " ".join(value.name.split())


async def run(value: CompoundResolveInput, ctx: ToolContext) -> CompoundAnswer:
    namespace, identifier = _query(value)
    found = await pubchem.resolve(ctx, namespace, identifier, value.limit)
    return CompoundAnswer(
        result=CompoundResult(
            matches=[
                CompoundMatch(
                    cid=c.cid,
                    iupac_name=c.iupac_name,
                    molecular_formula=c.molecular_formula,
                    inchikey=c.inchikey,
                    smiles=c.smiles,
                    page_url=c.page_url,
                )
                for c in found.compounds
            ],
            ambiguous=len(found.cids) > 1,
        ),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=None, calls=found.calls),
    )


def facts(value: CompoundResolveInput, answer: CompoundAnswer) -> list[Fact]:
    """One fact per returned compound, keyed by its PubChem CID: its identity."""
    return [
        Fact(
            attribute="compound_resolve",
            key=str(m.cid),
            value={
                "iupac_name": m.iupac_name,
                "molecular_formula": m.molecular_formula,
                "inchikey": m.inchikey,
                "smiles": m.smiles,
            },
            source=answer.evidence.source,
            as_of=answer.evidence.as_of,
        )
        for m in answer.result.matches
    ]


COMPOUND_RESOLVE = Tool(
    name="compound_resolve",
    path="/v1/tools/resolve/compound",
    title="Compound resolve",
    summary="Resolves a chemical name, CAS number, InChIKey or SMILES to PubChem compounds: CID, IUPAC name, formula, identifiers.",
    description=(
        "Resolve a chemical name (common, trade or systematic, or a CAS registry number), an InChIKey or a "
        "SMILES to PubChem compounds: CID, IUPAC name, molecular formula, InChIKey, SMILES and the PubChem "
        "page, in PubChem's order. `ambiguous` is true whenever PubChem matched more than one compound. "
        "Identity only: no synonyms, depositor records, synthesis routes or precursors."
    ),
    category="data",
    subcategory="compound_resolve",
    input_type=CompoundResolveInput,
    output_type=CompoundAnswer,
    run=run,
    price="0.005",
    family="chemistry",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(title="Resolve a common name", input={"name": "aspirin"}),
        Example(title="Resolve an InChIKey", input={"inchikey": "BSYNRYMUTXBXSQ-UHFFFAOYSA-N"}),
    ),
    check=check,
    exactly_one_of=(("name", "inchikey", "smiles"),),
    facts=facts,
)
