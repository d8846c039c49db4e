"""`physical_mail_send` (POST /v1/tools/physical-mail/send): one letter printed and mailed
to a US address through the `mail` provider, as a job. 1.50 USDC black and white, 2.50
USDC color, for a letter of up to 6 pages; an Idempotency-Key is required.

The job verifies the address first: `undeliverable` fails it with `target_unreachable`
(refunded, nothing mailed). Then it asks the provider for the letter with an idempotency
key of the provider's own, derived from the job's request id, and keeps the job's state in
`postal_letters` (tables.py), so a run made again after a worker crash never mails a
second letter. docs/postal.md has the decisions."""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

from tollway import Example, FieldError, FieldErrors, Tool, ToolContext, ToolError, now_ms

from .content import MAX_PAGES, estimated_pages, text_letter, visible_text
from .lob import UNDELIVERABLE, MailClient
from .shapes import HTML_MAX_BYTES, PostalLetterInput, PostalLetterSent, PostalVerifiedAddress
from .tables import PostalLetter

FAMILY = "postal"
NAME = "physical_mail_send"
PRICE_BLACK_WHITE = 1_500_000  # 1.50 USDC
PRICE_COLOR = 2_500_000  # 2.50 USDC


def price(value: PostalLetterInput) -> int:
    return PRICE_COLOR if value.color else PRICE_BLACK_WHITE


def provider_key(request_id: str) -> str:
    """The Idempotency-Key sent to the provider with this job's letter: one job, one letter."""
    return "tollway-" + hashlib.sha256(f"{NAME}\n{request_id}".encode()).hexdigest()


def check(value: PostalLetterInput) -> None:
    errors: list[FieldError] = []
    if (value.html is None) == (value.text is None):
        errors.append(FieldError("html" if value.html is None else "text", "Give exactly one of html or text"))
    for name in ("name", "line1", "city"):
        if not getattr(value.to, name).strip():
            errors.append(FieldError(f"to.{name}", "Must not be blank"))
    if value.html is not None:
        if len(value.html.encode()) > HTML_MAX_BYTES:
            errors.append(FieldError("html", f"At most {HTML_MAX_BYTES:,} bytes of UTF-8"))
        elif "<" not in value.html:
            errors.append(FieldError("html", "Not HTML: send plain text as text"))
        elif (pages := estimated_pages(visible_text(value.html))) > MAX_PAGES:
            errors.append(FieldError("html", f"Prints on about {pages} pages; a letter is at most {MAX_PAGES}"))
    if value.text is not None and (pages := estimated_pages(value.text)) > MAX_PAGES:
        errors.append(FieldError("text", f"Prints on about {pages} pages; a letter is at most {MAX_PAGES}"))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise FieldErrors(errors)


async def _change(rid: str, **values: Any) -> None:
    """Set columns of this job's letter row (and its updated_ms)."""
    await PostalLetter.update({**values, "updated_ms": now_ms()}).where(PostalLetter.request_id == rid)


def _answer(row: dict[str, Any], verified: dict[str, Any]) -> PostalLetterSent:
    return PostalLetterSent(
        letter_id=row["letter_id"],
        expected_delivery_date=row["expected_delivery_date"],
        color=bool(row["color"]),
        address=PostalVerifiedAddress(**verified),
    )


async def run(value: PostalLetterInput, ctx: ToolContext) -> PostalLetterSent:
    ctx.check_content(value.text, value.html)
    mail = cast(MailClient, ctx.provider("mail"))  # the kind's interface
    rid = ctx.request_id
    now = now_ms()
    await PostalLetter.insert(
        PostalLetter(
            request_id=rid,
            agent_id=ctx.agent_id or "",
            state="verifying",
            color=1 if value.color else 0,
            lob_key=provider_key(rid),
            created_ms=now,
            updated_ms=now,
        )
    ).on_conflict(target=PostalLetter.request_id, action="DO NOTHING")
    row = await PostalLetter.select().where(PostalLetter.request_id == rid).first()
    verified = json.loads(row["verification"]) if row["verification"] else None
    if row["letter_id"] and verified is not None:  # run again after the letter was made: the same answer
        return _answer(row, verified)
    if verified is None:
        await ctx.report("verifying the address")
        found = await mail.verify(value.to)
        verified = {
            "deliverability": found.deliverability,
            "primary_line": found.primary_line,
            "secondary_line": found.secondary_line,
            "last_line": found.last_line,
        }
        await _change(rid, verification=json.dumps(verified))
    if verified["deliverability"] == UNDELIVERABLE:
        await _change(rid, state="undeliverable")
        raise ToolError(
            "target_unreachable",
            "The address is undeliverable according to the USPS (address verification); nothing was mailed.",
            status=400,
            details={"deliverability": UNDELIVERABLE},
        )
    await ctx.report("sending the letter")
    await _change(rid, state="sending")
    html = value.html if value.html is not None else text_letter(value.text or "")
    letter = await mail.send_letter(
        to=value.to,
        html=html,
        color=value.color,
        idempotency_key=row["lob_key"],
        description=f"Tollway {NAME} {rid}",
        metadata={"tollway_request_id": rid},
    )
    await _change(rid, state="sent", letter_id=letter.id, expected_delivery_date=letter.expected_delivery_date)
    await ctx.report("letter accepted for printing and mailing")
    return PostalLetterSent(
        letter_id=letter.id,
        expected_delivery_date=letter.expected_delivery_date,
        color=value.color,
        address=PostalVerifiedAddress(**verified),
    )


EXAMPLE_TO = {
    "name": "Dana Smith",
    "line1": "185 Berry St",
    "line2": "Ste 6100",
    "city": "San Francisco",
    "state": "CA",
    "zip": "94107",
}

PHYSICAL_MAIL_SEND = Tool(
    name=NAME,
    path="/v1/tools/physical-mail/send",
    title="Send a physical letter",
    summary="Prints and mails one letter to a verified US address: 1.50 USDC black and white, 2.50 USDC color.",
    description=(
        "Print and mail one letter (up to 6 pages) to a US address. The address is verified first (USPS deliverability): an "
        "undeliverable one fails the job with target_unreachable, refunded and nothing mailed. The letter is html (at most "
        "100 KB) or plain text, black and white (1.50 USDC) or color (2.50 USDC). Needs an idempotency key: the same key with the same letter gives "
        "back the first job, charged and mailed once; the same key with another letter is refused. Runs as a job whose result "
        "is letter_id, expected_delivery_date and the verified address."
    ),
    category="communication",
    subcategory="letter",
    input_type=PostalLetterInput,
    output_type=PostalLetterSent,
    run=run,
    price=price,
    family=FAMILY,
    mode="job",
    accepted_status="queued",
    idempotency="required",
    idempotency_durable=True,  # "mandatory, stored durably": a key is never forgotten
    rate_limit="paid",
    check=check,
    exactly_one_of=(("html", "text"),),
    provider_kind="mail",
    time_limit_s=150.0,
    examples=(
        Example(
            "A plain-text letter, black and white",
            {"to": EXAMPLE_TO, "text": "Dear Dana,\n\nYour order has shipped.\n\nThe shop"},
        ),
        Example(
            "An HTML letter in color",
            {
                "to": {
                    "name": "Lee Park",
                    "line1": "210 King St",
                    "city": "San Francisco",
                    "state": "CA",
                    "zip": "94107",
                },
                "html": "<html><body><h1>Welcome</h1><p>Dear Lee, thank you for joining us.</p></body></html>",
                "color": True,
            },
        ),
    ),
)
