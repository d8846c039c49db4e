"""FDIC BankFind client: one `/institutions` request and its parsing.

Requests go through `FDIC` (a `tollway.Upstream`): the kernel's `ctx.http`, the
`fdic_api_url` / `fdic_api_key` settings, and one mapping of every upstream failure
to a `ToolError` (the call is not charged). Tests replay answers through a transport.

Response shape (FDIC's own API definition, `swagger.yaml` / `institution_properties.yaml`):
`{"meta": {"total": n, ...}, "data": [{"data": {<fields>}, "score": s}, ...], "totals": {"count": n}}`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from tollway import ToolContext, Upstream, source_int, source_text

FDIC = Upstream(
    family="banks",
    name="fdic",
    label="FDIC",
    default_base_url="https://api.fdic.gov/banks",
    description="Base URL of the FDIC BankFind Suite API (or a mirror / local replay server serving the same paths).",
    api_key="Optional api.data.gov key sent to FDIC as `api_key` (FDIC may refuse or throttle calls without one).",
)
INSTITUTIONS_PATH = "/institutions"
# Candidates fetched for a name search, re-ranked here (FDIC sorts by NAME by default).
NAME_CANDIDATES = 100
FIELDS = "NAME,CERT,ACTIVE,CITY,STALP,REGAGNT,BKCLASS,CLCODE,ESTYMD,WEBADDR,ASSET,DEP,REPDTE"

# FDIC's REGAGNT codes -> our regulator names (OCC, FDIC, FED or STATE; docs/banks.md).
_REGULATORS = {"OCC": "OCC", "FDIC": "FDIC", "FRB": "FED", "FED": "FED", "STATE": "STATE"}
# Credit unions: class CU, regulator NCUA, or class codes 91-93 (institution_properties.yaml).
_CU_CLCODES = {91, 92, 93}

_MDY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$")
_YMD = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
# What is kept of a name before it is sent: FDIC's query language gives meaning to
# quotes, colons, brackets, parentheses, backslashes, `!`, `*`, `?`, `~`, `^` ...
_UNSAFE = re.compile(r"[^A-Z0-9&'., -]+")


class Bank(msgspec.Struct):
    """A Bank (docs/banks.md); every field but `active` is null when FDIC gives no value."""

    name: str | None
    fdic_certificate: int | None
    active: bool  # open and insured by the FDIC
    city: str | None
    state: str | None  # two letters
    regulator: str | None  # OCC, FDIC, FED or STATE
    charter_class: str | None  # FDIC institution class code (N, NM, SM, SB, SA, OI, ...)
    established_on: str | None  # YYYY-MM-DD
    website: str | None
    total_assets_usd: float | None
    total_deposits_usd: float | None
    reported_on: str | None  # YYYY-MM-DD, end of the reporting period of the figures


@dataclass(frozen=True)
class Candidate:
    """A bank FDIC sent, with its text-match score (0 when absent), which ranks a name search."""

    bank: Bank
    score: float


@dataclass(frozen=True)
class InstitutionsPage:
    total: int  # FDIC's meta.total, less the credit unions seen
    banks: list[Candidate]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", ""))
        except ValueError:
            return None
    return None


def thousands_to_usd(value: Any) -> float | None:
    """FDIC reports ASSET and DEP in thousands of dollars."""
    n = _number(value)
    return None if n is None else n * 1000


def parse_date(value: Any) -> str | None:
    """FDIC's `MM/DD/YYYY` (also ISO or YYYYMMDD) as YYYY-MM-DD; None when unreadable.

    FDIC writes `12/31/9999` for "no end date"; a year 9999 is read as no date.
    """
    text = source_text(value) or ""
    if m := _MDY.match(text):
        month, day, year = (int(g) for g in m.groups())
    elif m := (_ISO.match(text) or _YMD.match(text)):
        year, month, day = (int(g) for g in m.groups())
    else:
        return None
    if year >= 9999:
        return None
    try:
        return _dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def parse_website(value: Any) -> str | None:
    text = source_text(value)
    if text is None or text.lower() in ("0", "n/a", "none"):
        return None
    return text


def parse_institution(row: Mapping[str, Any]) -> Bank:
    """One FDIC institution record (the inner `data` object) -> a Bank (docs/banks.md)."""
    bkclass = source_text(row.get("BKCLASS"))
    state = source_text(row.get("STALP"))
    return Bank(
        name=source_text(row.get("NAME")),
        fdic_certificate=source_int(row.get("CERT")),
        active=source_int(row.get("ACTIVE")) == 1,
        city=source_text(row.get("CITY")),
        state=state.upper() if state and len(state) == 2 else None,
        regulator=_REGULATORS.get(_regulator_code(row)),
        charter_class=bkclass.upper() if bkclass else None,
        established_on=parse_date(row.get("ESTYMD")),
        website=parse_website(row.get("WEBADDR")),
        total_assets_usd=thousands_to_usd(row.get("ASSET")),
        total_deposits_usd=thousands_to_usd(row.get("DEP")),
        reported_on=parse_date(row.get("REPDTE")),
    )


def _regulator_code(row: Mapping[str, Any]) -> str:
    return (source_text(row.get("REGAGNT")) or "").upper()


def is_credit_union(row: Mapping[str, Any]) -> bool:
    """Class CU, regulator NCUA, or class codes 91-93: not a bank of ours."""
    bkclass = (source_text(row.get("BKCLASS")) or "").upper()
    return _regulator_code(row) == "NCUA" or bkclass == "CU" or source_int(row.get("CLCODE")) in _CU_CLCODES


def parse_body(body: Any) -> InstitutionsPage:
    """A decoded 200 answer -> InstitutionsPage (credit unions removed)."""
    if not isinstance(body, Mapping) or not isinstance(body.get("data"), list):
        raise FDIC.unavailable("FDIC answered without a result list.")
    banks: list[Candidate] = []
    credit_unions = 0
    for item in body["data"]:
        if not isinstance(item, Mapping):
            continue
        row = item.get("data")
        if not isinstance(row, Mapping):
            continue
        if is_credit_union(row):
            credit_unions += 1
        else:
            banks.append(Candidate(parse_institution(row), _number(item.get("score")) or 0.0))
    meta = body.get("meta")
    total = source_int(meta.get("total")) if isinstance(meta, Mapping) else None
    if total is None:
        totals = body.get("totals")
        total = source_int(totals.get("count")) if isinstance(totals, Mapping) else None
    # Credit unions FDIC counted are not ours to count; never report fewer than kept.
    total = max((total or 0) - credit_unions, len(banks))
    return InstitutionsPage(total=total, banks=banks)


def search_text(name: str) -> str:
    """The name as FDIC's search is sent it: upper case (FDIC asks for it), query
    syntax characters replaced by spaces, single-spaced."""
    return " ".join(_UNSAFE.sub(" ", name.upper()).split())


def normalized_name(name: str | None) -> str:
    return search_text(name or "").replace(".", "").replace(",", "")


def rank(banks: list[Candidate], name: str) -> list[Candidate]:
    """Best first: the exact name, then FDIC's score, then open institutions, then
    the largest by assets; FDIC's order breaks remaining ties (stable sort)."""
    wanted = normalized_name(name)
    return sorted(
        banks,
        key=lambda c: (
            normalized_name(c.bank.name) != wanted,
            -c.score,
            not c.bank.active,
            -(c.bank.total_assets_usd or 0.0),
        ),
    )


def query_params(*, name: str | None, certificate: int | None, limit: int, api_key: str | None) -> dict[str, str]:
    params: dict[str, str] = {}
    if certificate is not None:
        params["filters"] = f"CERT:{certificate}"
        params["limit"] = str(limit)
    else:
        params["search"] = f"NAME:{search_text(name or '')}"
        params["limit"] = str(max(NAME_CANDIDATES, limit))
    params["fields"] = FIELDS
    params["offset"] = "0"
    params["format"] = "json"
    if api_key:
        params["api_key"] = api_key
    return params


async def fetch_institutions(
    ctx: ToolContext, *, name: str | None = None, certificate: int | None = None, limit: int = 5
) -> InstitutionsPage:
    """GET {base}/institutions by certificate (filters=CERT:n) or name (search=NAME:...)."""
    params = query_params(name=name, certificate=certificate, limit=limit, api_key=FDIC.api_key(ctx))
    page = parse_body(await FDIC.get_json(ctx, INSTITUTIONS_PATH, params=params))
    if certificate is not None:
        # Exact match only: a mirror that ignored the filter must not pass off other banks.
        banks = [c for c in page.banks if c.bank.fdic_certificate == certificate]
        return InstitutionsPage(total=len(banks), banks=banks)
    return InstitutionsPage(total=page.total, banks=rank(page.banks, name or ""))
