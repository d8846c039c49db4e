"""The `email_verification` tool: its input/output types, its verdict and its run.

Declared once here; the kernel derives the route, MCP tool, schema and price.
Checks, in order: syntax and normalisation (email-validator, without its own DNS
check), the domain's mail routing (`dns_check`), the disposable / role / free-mail lists
(`lists`), and when asked and allowed the SMTP RCPT probe (`smtp_probe`). The verdict's
rules are in `verdict` and docs/verify.md.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from email_validator import EmailNotValidError, ValidatedEmail, validate_email
from msgspec import Meta

from tollway import Evidence, Example, Tool, ToolContext

from .dns_check import MailRoute, mail_route, resolver_for
from .lists import is_disposable, is_free, is_role
from .settings import config
from .smtp_probe import ProbeResult, probe

SOURCE = "DNS"  # evidence.source: the domain's public DNS records, as the resolver gave them
SOURCE_KIND = "public"

Email = Annotated[
    str, Meta(min_length=3, max_length=320, description="The address to verify.", examples=["jane.doe@example.com"])
]
CheckSmtp = Annotated[
    bool, Meta(description="Also probe the mailbox on its mail server (no message is sent), if the operator allows it.")
]

Result = Literal["deliverable", "undeliverable", "risky", "unknown"]
Reason = Literal[
    "invalid_syntax", "no_such_domain", "null_mx", "no_mail_server", "mailbox_rejected",
    "disposable", "role_account", "catch_all", "accepted", "smtp_inconclusive", "smtp_not_checked",
]  # fmt: skip
Skipped = Literal[
    "not_requested", "not_applicable", "probe_disabled", "private_address", "unreachable", "probe_refused", "smtputf8_unsupported",
]  # fmt: skip


class EmailVerificationInput(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    check_smtp: CheckSmtp = False


class VerifySyntax(msgspec.Struct):
    valid: bool
    local_part: str | None  # as written (case kept: only the mail server may fold it)
    domain: str | None  # normalised: lower case, Unicode NFC (an internationalised domain in Unicode)
    ascii_domain: str | None  # its IDNA (xn--) form, the one DNS is asked about
    ascii_email: str | None  # the address in ASCII; null when the local part needs SMTPUTF8
    smtputf8: bool  # the local part has non-ASCII characters: only SMTPUTF8 servers take it
    error: str | None  # why the address is not valid (email-validator's words)


class VerifyMx(msgspec.Struct):
    host: str
    preference: int


class VerifyDomain(msgspec.Struct):
    exists: bool  # false: NXDOMAIN
    accepts_mail: bool  # MX records, or an implicit MX; and no null MX
    mx: list[VerifyMx]  # the MX records, lowest preference first (the null MX is not listed)
    implicit_mx: bool  # no MX record, but an A or AAAA record: the domain is its own mail host
    null_mx: bool  # RFC 7505 `MX 0 .`: the domain accepts no mail


class VerifySmtp(msgspec.Struct):
    checked: bool  # a reply to RCPT TO for the address was read
    skipped: Skipped | None  # why not, when not
    host: str | None  # the mail host that answered
    code: int | None  # its reply code to RCPT TO (250 accepted, 550/551/553 rejected, 4xx temporary)
    message: str | None  # its reply text, or why the probe stopped
    catch_all: bool | None  # it accepted a random address at the domain too; null when not known


class VerifyChecks(msgspec.Struct):
    syntax: VerifySyntax
    domain: VerifyDomain | None  # null when the syntax check failed (nothing was looked up)
    disposable: bool  # a throwaway-mail service's domain (or mail host)
    role: bool  # a function or team rather than a person (info@, support@, noreply@...)
    free: bool  # a free consumer mail provider (gmail.com, outlook.com...)
    smtp: VerifySmtp


class EmailVerificationAnswer(msgspec.Struct):
    email: str  # as given
    normalized: str | None  # email-validator's normalised address; null when the syntax is invalid
    result: Result
    reason: Reason
    checks: VerifyChecks
    evidence: Evidence | None  # source DNS; null for an invalid address (nothing was looked up)


SKIPPED_MESSAGES: dict[str, str] = {
    "not_requested": "The mailbox was not probed: check_smtp was not asked.",
    "not_applicable": "The mailbox was not probed: the address cannot receive mail.",
    "probe_disabled": "The mailbox was not probed: this service does not probe mail servers.",
}


def skipped(why: str) -> VerifySmtp:
    return VerifySmtp(checked=False, skipped=why, host=None, code=None, message=SKIPPED_MESSAGES[why], catch_all=None)  # type: ignore[arg-type]


def smtp_of(found: ProbeResult) -> VerifySmtp:
    return VerifySmtp(checked=found.checked, skipped=found.skipped, host=found.host, code=found.code,  # type: ignore[arg-type]
                      message=found.message, catch_all=found.catch_all)  # fmt: skip


def verdict(route: MailRoute, *, disposable: bool, role: bool, smtp: ProbeResult | None) -> tuple[Result, Reason]:
    """The verdict of a syntactically valid address, first rule that applies: what makes
    delivery impossible, then what makes the address a poor one to send to, then what
    the mailbox probe said."""
    if not route.exists:
        return "undeliverable", "no_such_domain"
    if route.null_mx:
        return "undeliverable", "null_mx"
    if not route.accepts_mail:
        return "undeliverable", "no_mail_server"
    if smtp is not None and smtp.rejected:
        return "undeliverable", "mailbox_rejected"
    if disposable:
        return "risky", "disposable"
    if role:
        return "risky", "role_account"
    if smtp is not None and smtp.accepted:
        return ("risky", "catch_all") if smtp.catch_all else ("deliverable", "accepted")
    if smtp is not None and smtp.checked:
        return "unknown", "smtp_inconclusive"
    return "unknown", "smtp_not_checked"


def _syntax(valid: ValidatedEmail) -> VerifySyntax:
    return VerifySyntax(
        valid=True, local_part=valid.local_part, domain=valid.domain, ascii_domain=valid.ascii_domain,
        ascii_email=valid.ascii_email, smtputf8=bool(valid.smtputf8), error=None,
    )  # fmt: skip


def _invalid(value: EmailVerificationInput, error: str) -> EmailVerificationAnswer:
    syntax = VerifySyntax(
        valid=False, local_part=None, domain=None, ascii_domain=None, ascii_email=None, smtputf8=False, error=error
    )
    checks = VerifyChecks(syntax=syntax, domain=None, disposable=False, role=False, free=False,
                          smtp=skipped("not_applicable" if value.check_smtp else "not_requested"))  # fmt: skip
    return EmailVerificationAnswer(
        email=value.email,
        normalized=None,
        result="undeliverable",
        reason="invalid_syntax",
        checks=checks,
        evidence=None,
    )


async def run(value: EmailVerificationInput, ctx: ToolContext) -> EmailVerificationAnswer:
    cfg = config(ctx.settings)
    try:
        valid = validate_email(value.email.strip(), check_deliverability=False)
    except EmailNotValidError as exc:
        return _invalid(value, str(exc))
    domain = valid.ascii_domain
    resolver = resolver_for(cfg)
    route = await mail_route(resolver, domain)
    disposable = is_disposable(domain, [host for host, _ in route.mx])
    role = is_role(valid.local_part)
    found: ProbeResult | None = None
    if not value.check_smtp:
        smtp = skipped("not_requested")
    elif not route.accepts_mail:
        smtp = skipped("not_applicable")
    elif not cfg.smtp_probe:
        smtp = skipped("probe_disabled")
    else:
        recipient = valid.ascii_email or valid.normalized
        found = await probe(resolver, cfg, route, domain, recipient, utf8=valid.ascii_email is None)
        smtp = smtp_of(found)
    result, reason = verdict(route, disposable=disposable, role=role, smtp=found)
    checks = VerifyChecks(
        syntax=_syntax(valid),
        domain=VerifyDomain(exists=route.exists, accepts_mail=route.accepts_mail, mx=[VerifyMx(host=h, preference=p) for h, p in route.mx],
                            implicit_mx=route.implicit_mx, null_mx=route.null_mx),
        disposable=disposable, role=role, free=is_free(domain), smtp=smtp,
    )  # fmt: skip
    return EmailVerificationAnswer(
        email=value.email, normalized=valid.normalized, result=result, reason=reason, checks=checks,
        evidence=Evidence.now(SOURCE, source_kind=SOURCE_KIND, as_of=None),
    )  # fmt: skip


EMAIL_VERIFICATION = Tool(
    name="email_verification",
    path="/v1/tools/verify/email",
    title="Email address verification",
    summary=(
        "Can this email address receive mail? Syntax, the domain's mail servers (DNS), disposable/role/free-mail flags, "
        "optionally a mailbox probe: a verdict with a reason."
    ),
    description=(
        "Checks whether an email address can receive mail, in order: its syntax and normalised form "
        "(internationalised addresses included); the domain's mail routing in DNS (MX records by preference, "
        "the implicit MX of a domain with only an address record, the null MX of a domain that takes no mail, "
        "a domain that does not exist); whether the domain is a disposable-mail service, whether it is a free-mail "
        "provider, whether the local part is a role account (info, support, noreply...); and, when check_smtp is "
        "asked and the operator allows it, an SMTP RCPT probe of the mailbox on the best mail server, with catch-all "
        "detection (no message is ever sent). The answer is a verdict (result: deliverable, undeliverable, risky or "
        "unknown), one reason token (invalid_syntax, no_such_domain, null_mx, no_mail_server, mailbox_rejected, "
        "disposable, role_account, catch_all, accepted, smtp_inconclusive, smtp_not_checked) and every check's "
        "findings. Without the probe a valid address at a domain that takes mail is unknown (smtp_not_checked): only "
        "the mailbox's own server can say more. A malformed address is a normal answer (undeliverable, "
        "invalid_syntax); a DNS resolver that cannot answer fails the call, which is then not charged."
    ),
    category="verification",
    subcategory="email_verification",
    input_type=EmailVerificationInput,
    output_type=EmailVerificationAnswer,
    run=run,
    price="0.002",
    family="verify",
    payment_header="payment-signature",
    rate_limit="paid",
    examples=(
        Example(title="Verify an address from DNS", input={"email": "jane.doe@example.com"}),
        Example(
            title="Verify an address and probe its mailbox", input={"email": "jane.doe@example.com", "check_smtp": True}
        ),
    ),
)
