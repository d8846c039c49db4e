"""The `company_bank_profile` tool: its input/output types, its checks and its run.

Declared once here; the kernel derives the route, MCP tool, schema and price.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Fact, FieldError, Tool, ToolContext, search_key

from . import fdic
from .fdic import Bank

SOURCE = "FDIC"  # Federal Deposit Insurance Corporation (BankFind Suite)
SOURCE_KIND = "public"

BankName = Annotated[
    str,
    Meta(
        min_length=2,
        max_length=100,
        description="Institution name to search for (text match, best match first), 2 to 100 characters.",
        examples=["Bank of Hancock County"],
    ),
]
Certificate = Annotated[
    int,
    Meta(ge=1, description="FDIC certificate number (exact match; preferred over name).", examples=[10057]),
]
Limit = Annotated[int, Meta(ge=1, le=10, description="Most banks to return, 1 to 10 (default 5).")]


class BankProfileInput(msgspec.Struct, forbid_unknown_fields=True):
    name: BankName | None = None
    fdic_certificate: Certificate | None = None
    limit: Limit = 5


class BankProfileResult(msgspec.Struct):
    total: int  # every match FDIC counted (credit unions excluded); may exceed len(banks)
    banks: list[Bank]


class BankProfileAnswer(msgspec.Struct):
    result: BankProfileResult
    evidence: Evidence  # as_of: the latest reported_on among the banks returned; null when none


def check(value: BankProfileInput) -> None:
    """Exactly one of name / fdic_certificate; a name with a letter or digit."""
    if (value.name is None) == (value.fdic_certificate is None):
        field = "name" if value.name is None else "fdic_certificate"
        raise FieldError(field, "Give exactly one of name or fdic_certificate")
    if value.name is not None:
        if len(value.name.strip()) < 2:
            raise FieldError("name", "Expected at least 2 characters besides leading and trailing spaces")
        if len(fdic.search_text(value.name)) < 2 or not any(c.isalnum() for c in fdic.search_text(value.name)):
            raise FieldError("name", "Expected at least 2 letters or digits")


async def run(value: BankProfileInput, ctx: ToolContext) -> BankProfileAnswer:
    page = await fdic.fetch_institutions(
        ctx,
        name=value.name if value.fdic_certificate is None else None,
        certificate=value.fdic_certificate,
        limit=value.limit,
    )
    banks = [c.bank for c in page.banks[: value.limit]]
    dates = [b.reported_on for b in banks if b.reported_on]
    return BankProfileAnswer(
        result=BankProfileResult(total=page.total, banks=banks),
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=max(dates) if dates else None),
    )


def facts(value: BankProfileInput, answer: BankProfileAnswer) -> list[Fact]:
    """One fact per bank returned, keyed by its FDIC certificate number; the value is
    the whole Bank record (numeric fields total_assets_usd / total_deposits_usd at
    the top level). Banks without a certificate cannot be keyed and are skipped.
    A search by name is also recorded under the hash of its input: the total and
    the certificates found, in order."""
    out: list[Fact] = []
    for bank in answer.result.banks:
        if bank.fdic_certificate is None:
            continue
        out.append(
            Fact(
                attribute="company_bank_profile",
                key=str(bank.fdic_certificate),
                value=msgspec.to_builtins(bank),
                source=answer.evidence.source,
                as_of=bank.reported_on,
            )
        )
    if value.name is not None:
        out.append(
            Fact(
                attribute="company_bank_profile",
                key=search_key(value),
                value={"total": answer.result.total, "banks": [b.fdic_certificate for b in answer.result.banks]},
                source=answer.evidence.source,
                as_of=answer.evidence.as_of,
            )
        )
    return out


COMPANY_BANK_PROFILE = Tool(
    name="company_bank_profile",
    path="/v1/tools/lookup/company-bank-profile",
    title="Bank profile",
    summary="An FDIC-insured US bank or savings institution from FDIC BankFind: status, location, regulator, assets and deposits.",
    description=(
        "An FDIC-insured US bank or savings institution as FDIC BankFind describes it: name, FDIC certificate, "
        "whether it is open and insured, city and state, primary regulator, charter class, date established, "
        "website, total assets and deposits in US dollars and their report date. Give exactly one of "
        "`fdic_certificate` (exact, preferred) or `name` (text match, best first). Closed institutions are "
        "included with active false; credit unions are not covered. `total` counts every match."
    ),
    category="data",
    subcategory="bank_profile",
    input_type=BankProfileInput,
    output_type=BankProfileAnswer,
    run=run,
    price="0.005",
    family="banks",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(title="A bank by FDIC certificate", input={"fdic_certificate": 10057}),
        Example(title="Banks by name", input={"name": "Bank of Hancock County", "limit": 3}),
    ),
    check=check,
    exactly_one_of=(("name", "fdic_certificate"),),
    facts=facts,
    searches=True,
)
