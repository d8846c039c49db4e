"""PubChem PUG REST client: identifier -> CIDs, then CIDs -> identity properties.

Uses only the `httpx.AsyncClient` it is handed (the kernel's `ctx.http`), so tests
replay recorded answers through a transport. Every upstream failure becomes a
`ToolError` (the call is not charged). PubChem's "no CID found" fault is not a
failure: it is an empty answer.

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

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from tollway import iso, now_ms
from tollway import Setting
from tollway import ToolError

SOURCE = "PubChem"
DEFAULT_BASE_URL = "https://pubchem.ncbi.nlm.nih.gov/rest/pug"
BASE_URL_SETTING = Setting(
    family="chemistry",
    name="pubchem_api_url",
    default=DEFAULT_BASE_URL,
    description="Base URL of PubChem PUG REST (or a mirror / local replay server serving the same paths).",
)
# The public compound page; not derived from the API setting (a mirror serves the API only).
PAGE_URL = "https://pubchem.ncbi.nlm.nih.gov/compound/{cid}"
PROPERTIES = ("MolecularFormula", "IUPACName", "InChIKey", "IsomericSMILES")
# PubChem renamed its SMILES properties in 2025: `SMILES` is the full (isomeric)
# SMILES and `ConnectivitySMILES` the former canonical one. The legacy request name
# `IsomericSMILES` is still accepted; either answer key is read, full SMILES first.
SMILES_KEYS = ("SMILES", "IsomericSMILES", "CanonicalSMILES", "ConnectivitySMILES")
REQUEST_TIMEOUT_S = 15.0
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


def _now() -> str:
    return iso(now_ms())


def _unavailable(message: str, **details: Any) -> ToolError:
    return ToolError("provider_unavailable", message, status=503, details=details or None)


def base_url_from(settings: Mapping[str, str]) -> str:
    """The configured base URL (setting name, then variable name, then environment)."""
    s = BASE_URL_SETTING
    url = settings.get(s.name) or settings.get(s.env_var) or os.environ.get(s.env_var) or DEFAULT_BASE_URL
    return url.strip().rstrip("/") or DEFAULT_BASE_URL


_NOT_JSON = object()


def _decode(response: httpx.Response) -> Any:
    try:
        return msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        return _NOT_JSON


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


async def _post(http: httpx.AsyncClient, url: str, form: dict[str, str], calls: list[str]) -> httpx.Response:
    try:
        response = await http.post(url, data=form, timeout=REQUEST_TIMEOUT_S)
    except httpx.TimeoutException as exc:
        raise _unavailable("PubChem did not answer in time.", reason="timeout") from exc
    except httpx.HTTPError as exc:
        raise _unavailable("PubChem could not be reached.", reason=type(exc).__name__) from exc
    calls.append(_now())
    return response


def _raise_for(response: httpx.Response, body: Any) -> None:
    """Map a non-200 answer (other than the not-found fault) to the tool failure codes (docs/api.md)."""
    status = response.status_code
    code = _fault_code(body)
    if status == 429 or (status == 503 and code == "PUGREST.ServerBusy"):
        details: dict[str, Any] = {"upstream_status": status}
        retry_after = response.headers.get("retry-after")
        if retry_after and retry_after.strip().isdigit():
            details["retry_after"] = int(retry_after.strip())
        raise ToolError("rate_limited", "PubChem is limiting requests; try again later.", status=503, details=details)
    if status == 400 and code == "PUGREST.BadRequest":
        # e.g. a SMILES PubChem cannot parse: the caller's input, not an outage.
        raise ToolError("invalid_input", "PubChem could not read the identifier given.", status=400,
                        details={"upstream_status": 400, "upstream_code": code})
    raise _unavailable(f"PubChem answered HTTP {status}.", upstream_status=status, **({"upstream_code": code} if code else {}))


def parse_cids(body: Any) -> list[int]:
    """`{"IdentifierList": {"CID": [..]}}` -> positive CIDs, deduplicated, in order.

    CID 0 is PUG REST's way of saying "a valid structure not in PubChem" for
    structure searches; it is dropped.
    """
    if not isinstance(body, Mapping) or not isinstance(body.get("IdentifierList"), Mapping):
        raise _unavailable("PubChem answered without an identifier list.")
    raw = body["IdentifierList"].get("CID")
    if not isinstance(raw, list):
        raise _unavailable("PubChem answered without a CID list.")
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
        raise _unavailable("PubChem answered without a property table.")
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


async def resolve(http: httpx.AsyncClient, base_url: str, namespace: str, identifier: str, limit: int) -> Resolution:
    """Identifier -> every matching CID, then the identity of the first `limit` of them."""
    if namespace not in NAMESPACES:
        raise ValueError(namespace)
    base = base_url.rstrip("/")
    result = Resolution()

    response = await _post(http, f"{base}/compound/{namespace}/cids/JSON", {namespace: identifier}, result.calls)
    body = _decode(response)
    if response.status_code == 404 and _fault_code(body) == "PUGREST.NotFound":
        return result  # PubChem's "No CID found": an empty, completed answer
    if response.status_code != 200:
        _raise_for(response, body)
    if body is _NOT_JSON:
        raise _unavailable("PubChem answered with something other than JSON.")
    result.cids = parse_cids(body)
    wanted = result.cids[:limit]
    if not wanted:
        return result

    url = f"{base}/compound/cid/property/{','.join(PROPERTIES)}/JSON"
    response = await _post(http, url, {"cid": ",".join(str(c) for c in wanted)}, result.calls)
    body = _decode(response)
    if response.status_code != 200:
        _raise_for(response, body)
    if body is _NOT_JSON:
        raise _unavailable("PubChem answered with something other than JSON.")
    by_cid = parse_properties(body)
    # Source order is the CID order of the first answer; a CID PubChem sent no
    # properties for is left out rather than invented.
    result.compounds = [by_cid[c] for c in wanted if c in by_cid]
    return result
