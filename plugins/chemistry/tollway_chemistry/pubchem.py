"""PubChem PUG REST client: identifier -> CIDs, then CIDs -> identity properties.

Requests go through `PUBCHEM` (a `tollway.Upstream`: the kernel's `ctx.http`, the
`pubchem_api_url` setting, one mapping of upstream failures to `ToolError`s, so the
call is not charged); tests replay recorded answers through a transport. PubChem's
"no CID found" fault is not a failure: it is an empty answer.

Requests (PUG REST, https://pubchem.ncbi.nlm.nih.gov/docs/pug-rest):

1. `POST {base}/compound/{name|inchikey|smiles}/cids/JSON`, the identifier in the
   form body (`name=aspirin`). PUG REST accepts the input either in the URL path or
   in the POST body; the body avoids every path-escaping problem (names with
   spaces, commas or `#`, SMILES with `#`, `+`, `%`).
   Answer: `{"IdentifierList": {"CID": [2244, ...]}}`, in PubChem's order.
2. `POST {base}/compound/cid/property/MolecularFormula,IUPACName,InChIKey,IsomericSMILES/JSON`
   with `cid=2244,5564` in the body (the call webchem recorded in
   `tests/fixtures/pubchem/`). Answer: `{"PropertyTable": {"Properties": [{"CID": ..}]}}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tollway import Reply, ToolContext, ToolError, Upstream

SOURCE = "PubChem"
PUBCHEM = Upstream(
    family="chemistry",
    name="pubchem",
    label="PubChem",
    default_base_url="https://pubchem.ncbi.nlm.nih.gov/rest/pug",
    description="Base URL of PubChem PUG REST (or a mirror / local replay server serving the same paths).",
)
# The public compound page; not derived from the API setting (a mirror serves the API only).
PAGE_URL = "https://pubchem.ncbi.nlm.nih.gov/compound/{cid}"
PROPERTIES = ("MolecularFormula", "IUPACName", "InChIKey", "IsomericSMILES")
# PubChem renamed its SMILES properties in 2025: `SMILES` is the full (isomeric)
# SMILES and `ConnectivitySMILES` the former canonical one. The legacy request name
# `IsomericSMILES` is still accepted; either answer key is read, full SMILES first.
SMILES_KEYS = ("SMILES", "IsomericSMILES", "CanonicalSMILES", "ConnectivitySMILES")
NAMESPACES = ("name", "inchikey", "smiles")


@dataclass(frozen=True)
class Compound:
    cid: int
    iupac_name: str | None
    molecular_formula: str | None
    inchikey: str | None
    smiles: str | None

    @property
    def page_url(self) -> str:
        return PAGE_URL.format(cid=self.cid)


@dataclass
class Resolution:
    """All CIDs PubChem matched (its order), the compounds fetched, one timestamp per call."""

    cids: list[int] = field(default_factory=list)
    compounds: list[Compound] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)


def _fault_code(body: Any) -> str | None:
    """PUG REST errors: `{"Fault": {"Code": "PUGREST.NotFound", "Message": ..}}`."""
    if isinstance(body, Mapping):
        fault = body.get("Fault")
        if isinstance(fault, Mapping) and isinstance(fault.get("Code"), str):
            return fault["Code"]
    return None


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return None


def _failure(reply: Reply) -> ToolError:
    """A non-2xx answer (other than the not-found fault) as a tool failure (docs/api.md):
    PubChem's own faults first, then the shared mapping with PubChem's fault code added."""
    code = _fault_code(reply.body)
    if reply.status == 503 and code == "PUGREST.ServerBusy":
        return PUBCHEM.rate_limited(reply)
    if reply.status == 400 and code == "PUGREST.BadRequest":
        # e.g. a SMILES PubChem cannot parse: the caller's input, not an outage.
        return ToolError(
            "invalid_input",
            "PubChem could not read the identifier given.",
            status=400,
            details={"upstream_status": 400, "upstream_code": code},
        )
    return PUBCHEM.refusal(reply, **({"upstream_code": code} if code else {}))


async def _post(ctx: ToolContext, path: str, form: dict[str, str], calls: list[str]) -> Any:
    """POST a form; the JSON answer, or None for PubChem's "No CID found" fault."""
    reply = await PUBCHEM.send(ctx, path, method="POST", data=form, calls=calls)
    if reply.status == 404 and _fault_code(reply.body) == "PUGREST.NotFound":
        return None
    if not reply.ok:
        raise _failure(reply)
    return PUBCHEM.json_of(reply)


def parse_cids(body: Any) -> list[int]:
    """`{"IdentifierList": {"CID": [..]}}` -> positive CIDs, deduplicated, in order.

    CID 0 is PUG REST's way of saying "a valid structure not in PubChem" for
    structure searches; it is dropped.
    """
    if not isinstance(body, Mapping) or not isinstance(body.get("IdentifierList"), Mapping):
        raise PUBCHEM.unavailable("PubChem answered without an identifier list.")
    raw = body["IdentifierList"].get("CID")
    if not isinstance(raw, list):
        raise PUBCHEM.unavailable("PubChem answered without a CID list.")
    seen: set[int] = set()
    cids: list[int] = []
    for cid in raw:
        if isinstance(cid, int) and not isinstance(cid, bool) and cid > 0 and cid not in seen:
            seen.add(cid)
            cids.append(cid)
    return cids


def parse_properties(body: Any) -> dict[int, Compound]:
    """`{"PropertyTable": {"Properties": [..]}}` -> compounds by CID."""
    table = body.get("PropertyTable") if isinstance(body, Mapping) else None
    rows = table.get("Properties") if isinstance(table, Mapping) else None
    if not isinstance(rows, list):
        raise PUBCHEM.unavailable("PubChem answered without a property table.")
    out: dict[int, Compound] = {}
    for row in rows:
        if not isinstance(row, Mapping):
            continue
        cid = row.get("CID")
        if not isinstance(cid, int) or isinstance(cid, bool) or cid <= 0:
            continue
        smiles = next((s for s in (_text(row.get(k)) for k in SMILES_KEYS) if s), None)
        out[cid] = Compound(
            cid=cid,
            iupac_name=_text(row.get("IUPACName")),
            molecular_formula=_text(row.get("MolecularFormula")),
            inchikey=_text(row.get("InChIKey")),
            smiles=smiles,
        )
    return out


async def resolve(ctx: ToolContext, namespace: str, identifier: str, limit: int) -> Resolution:
    """Identifier -> every matching CID, then the identity of the first `limit` of them."""
    if namespace not in NAMESPACES:
        raise ValueError(namespace)
    result = Resolution()
    body = await _post(ctx, f"/compound/{namespace}/cids/JSON", {namespace: identifier}, result.calls)
    if body is None:
        return result  # PubChem's "No CID found": an empty, completed answer
    result.cids = parse_cids(body)
    wanted = result.cids[:limit]
    if not wanted:
        return result
    path = f"/compound/cid/property/{','.join(PROPERTIES)}/JSON"
    by_cid = parse_properties(await _post(ctx, path, {"cid": ",".join(str(c) for c in wanted)}, result.calls) or {})
    # Source order is the CID order of the first answer; a CID PubChem sent no
    # properties for is left out rather than invented.
    result.compounds = [by_cid[c] for c in wanted if c in by_cid]
    return result
