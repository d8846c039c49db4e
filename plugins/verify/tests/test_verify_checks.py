"""The pieces behind the tool, without the service: the shipped lists, the disposable /
role / free-mail matching, the verdict's order of rules, the settings' reading, and the
probe's refusals (a server that refuses the sender, one without SMTPUTF8), the address
rule and the time budget, against the local DNS zone and real local SMTP servers."""

from __future__ import annotations

import asyncio
import time
import typing
from pathlib import Path

import pytest
from email_validator import EmailNotValidError, validate_email
from verify_dns_zone import Zone
from verify_smtp_servers import Mailboxes, closed_port, smtp_mailboxes

from tollway import ToolError
from tollway_verify import lists, smtp_probe
from tollway_verify.dns_check import MailRoute, mail_route, resolver_for
from tollway_verify.settings import SETTINGS, config
from tollway_verify.smtp_probe import ProbeResult, is_public, probe
from tollway_verify.tool import EMAIL_VERIFICATION, Reason, Skipped, verdict

# --- the shipped lists ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["disposable_domains", "free_domains"])
def test_every_listed_domain_is_a_valid_mail_domain(name: str) -> None:
    listed = getattr(lists, name)()
    assert len(listed) >= (300 if name == "disposable_domains" else 100)
    for domain in listed:
        assert domain == domain.lower().strip() and "." in domain and domain.isascii(), domain
        validate_email(f"someone@{domain}", check_deliverability=False)  # raises for a malformed domain


def test_no_free_provider_is_called_disposable() -> None:
    assert not lists.free_domains() & lists.disposable_domains()
    assert not any(lists.is_disposable(domain) for domain in lists.free_domains())


def test_role_accounts_are_stored_as_they_are_compared() -> None:
    roles = lists.role_accounts()
    assert {
        "postmaster",
        "abuse",
        "admin",
        "info",
        "support",
        "sales",
        "noreply",
        "webmaster",
        "billing",
        "contact",
        "hello",
        "team",
    } <= roles
    assert all(lists.role_key(role) == role for role in roles)


# --- matching -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "mail_hosts", "expected"),
    [("mailinator.com", (), True), ("MAILINATOR.COM.", (), True), ("a.b.mailinator.com", (), True), ("notmailinator.com", (), True),
     ("mailinator.com.example.net", (), False), ("xmailinator.com", (), False), ("example.com", (), False),
     ("brand-new.example", ("mx.guerrillamail.com",), True), ("example.com", ("mx1.example.com",), False)],
)  # fmt: skip
def test_disposable_matches_the_domain_its_parents_and_its_mail_hosts(domain, mail_hosts, expected) -> None:
    assert lists.is_disposable(domain, mail_hosts) is expected


@pytest.mark.parametrize(
    ("local_part", "expected"),
    [("info", True), ("INFO", True), ("no-reply", True), ("no_reply", True), ("No.Reply", True), ("noreply+alerts", True),
     ("do-not-reply", True), ("post.master", True), ("jane", False), ("information.jane", False), ("infos", False), ("sales2", False)],
)  # fmt: skip
def test_role_accounts_are_matched_after_folding(local_part: str, expected: bool) -> None:
    assert lists.is_role(local_part) is expected


@pytest.mark.parametrize(
    ("domain", "expected"),
    [("gmail.com", True), ("GMAIL.com", True), ("mail.gmail.com", False), ("example.com", False)],
)
def test_free_mail_is_matched_exactly(domain: str, expected: bool) -> None:
    assert lists.is_free(domain) is expected


# --- the verdict ----------------------------------------------------------------------------

MX = MailRoute(exists=True, mx=(("mx1.example.com", 10),))


def smtp(code: int | None, catch_all: bool | None = None) -> ProbeResult:
    return ProbeResult(checked=code is not None, code=code, catch_all=catch_all)


@pytest.mark.parametrize(
    ("route", "disposable", "role", "found", "expected"),
    [(MailRoute(exists=False), True, True, None, ("undeliverable", "no_such_domain")),
     (MailRoute(exists=True, null_mx=True), True, True, None, ("undeliverable", "null_mx")),
     (MailRoute(exists=True), True, True, None, ("undeliverable", "no_mail_server")),
     (MX, True, True, smtp(550), ("undeliverable", "mailbox_rejected")),
     (MX, False, False, smtp(551), ("undeliverable", "mailbox_rejected")),
     (MX, False, False, smtp(553), ("undeliverable", "mailbox_rejected")),
     (MX, True, True, smtp(250, catch_all=False), ("risky", "disposable")),
     (MX, False, True, smtp(250, catch_all=False), ("risky", "role_account")),
     (MX, False, False, smtp(250, catch_all=True), ("risky", "catch_all")),
     (MX, False, False, smtp(250, catch_all=False), ("deliverable", "accepted")),
     (MX, False, False, smtp(251, catch_all=None), ("deliverable", "accepted")),
     (MX, False, False, smtp(450), ("unknown", "smtp_inconclusive")),
     (MX, False, False, smtp(554), ("unknown", "smtp_inconclusive")),  # a policy refusal, not the mailbox's
     (MX, False, False, ProbeResult(checked=False, skipped="unreachable"), ("unknown", "smtp_not_checked")),
     (MX, False, False, None, ("unknown", "smtp_not_checked")),
     (MailRoute(exists=True, implicit_mx=True, addresses=("192.0.2.1",)), False, False, None, ("unknown", "smtp_not_checked"))],
)  # fmt: skip
def test_the_verdicts_rules_apply_in_order(route, disposable, role, found, expected) -> None:
    assert verdict(route, disposable=disposable, role=role, smtp=found) == expected


@pytest.mark.parametrize("page", ["plugins/verify/README.md", "docs/verify.md"])
def test_every_reason_and_skip_token_is_documented(page: str) -> None:
    text = (Path(__file__).resolve().parents[3] / page).read_text(encoding="utf-8")
    for token in (*typing.get_args(Reason), *typing.get_args(Skipped)):
        assert f"`{token}`" in text, token


# --- settings -------------------------------------------------------------------------------


def test_the_defaults() -> None:
    cfg = config({})
    assert (cfg.nameservers, cfg.dns_port, cfg.dns_timeout_s, cfg.smtp_probe, cfg.smtp_port, cfg.probe_from, cfg.smtp_allow_private) == (
        (), 53, 5.0, False, 25, "", False,
    )  # fmt: skip
    assert [s.env_var for s in SETTINGS] == [
        "TOLLWAY_VERIFY_NAMESERVERS", "TOLLWAY_VERIFY_DNS_PORT", "TOLLWAY_VERIFY_DNS_TIMEOUT_S", "TOLLWAY_VERIFY_SMTP_PROBE",
        "TOLLWAY_VERIFY_SMTP_PORT", "TOLLWAY_VERIFY_PROBE_FROM", "TOLLWAY_VERIFY_SMTP_ALLOW_PRIVATE",
    ]  # fmt: skip


def test_values_are_read_and_trimmed() -> None:
    cfg = config({"nameservers": " 1.1.1.1, 2606:4700:4700::1111 ,", "dns_port": "5353", "dns_timeout_s": "2.5", "smtp_probe": "ON",
                  "smtp_port": "2525", "probe_from": " verify@example.com ", "smtp_allow_private": "yes"})  # fmt: skip
    assert cfg.nameservers == ("1.1.1.1", "2606:4700:4700::1111") and (
        cfg.dns_port,
        cfg.dns_timeout_s,
        cfg.smtp_port,
    ) == (5353, 2.5, 2525)
    assert cfg.smtp_probe and cfg.smtp_allow_private and cfg.probe_from == "verify@example.com"


@pytest.mark.parametrize(
    ("settings", "variable"),
    [({"dns_port": "0"}, "TOLLWAY_VERIFY_DNS_PORT"), ({"smtp_port": "70000"}, "TOLLWAY_VERIFY_SMTP_PORT"),
     ({"dns_timeout_s": "-1"}, "TOLLWAY_VERIFY_DNS_TIMEOUT_S"), ({"dns_timeout_s": "soon"}, "TOLLWAY_VERIFY_DNS_TIMEOUT_S"),
     ({"nameservers": "1.1.1.1,resolver.local"}, "TOLLWAY_VERIFY_NAMESERVERS"), ({"smtp_allow_private": "2"}, "TOLLWAY_VERIFY_SMTP_ALLOW_PRIVATE"),
     ({"probe_from": "Verify <v@example.com>"}, "TOLLWAY_VERIFY_PROBE_FROM"), ({"probe_from": "nobody"}, "TOLLWAY_VERIFY_PROBE_FROM")],
)  # fmt: skip
def test_a_value_that_cannot_be_read_names_its_variable(settings, variable) -> None:
    with pytest.raises(ToolError) as info:
        config(settings)
    assert (info.value.code, info.value.status) == ("provider_unavailable", 503)
    assert info.value.details == {"reason": "misconfigured", "settings": [variable]} and variable in info.value.message


# --- the probe, without the service ---------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "public"),
    [("93.184.216.34", True), ("2606:2800:220:1:248:1893:25c8:1946", True), ("127.0.0.1", False), ("10.1.2.3", False),
     ("192.168.0.1", False), ("169.254.169.254", False), ("100.64.0.1", False), ("::1", False), ("fe80::1%eth0", False),
     ("fd00::1", False), ("::ffff:10.0.0.1", False), ("2002:0a00:0001::1", False), ("224.0.0.1", False), ("192.0.2.1", False)],
)  # fmt: skip
def test_only_public_addresses_are_probed_by_default(address: str, public: bool) -> None:
    assert is_public(address) is public


def settings(zone: Zone, port: int, **more: str) -> dict[str, str]:
    return {"nameservers": "127.0.0.1", "dns_port": str(zone.port), "dns_timeout_s": "1", "smtp_probe": "1", "smtp_port": str(port),
            "smtp_allow_private": "1", "probe_from": "verify@tollway-probe.example.com", **more}  # fmt: skip


async def probe_of(zone: Zone, port: int, email: str, **more: str) -> ProbeResult:
    cfg = config(settings(zone, port, **more))
    valid = validate_email(email, check_deliverability=False)
    resolver = resolver_for(cfg)
    route = await mail_route(resolver, valid.ascii_domain)
    return await probe(
        resolver, cfg, route, valid.ascii_domain, valid.ascii_email or valid.normalized, utf8=valid.ascii_email is None
    )


class RefusesSenders(Mailboxes):
    async def handle_MAIL(self, server, session, envelope, address, mail_options) -> str:
        self.senders.append(address)
        return "550 5.7.1 Probes are not welcome here"


async def test_a_server_refusing_the_sender_is_probe_refused_after_every_mail_host(zone: Zone) -> None:
    mailboxes = RefusesSenders(catch_all=True)
    with smtp_mailboxes(mailboxes) as (server, port):
        found = await probe_of(zone, port, "alice@example.com")
    assert (found.checked, found.skipped, found.code) == (False, "probe_refused", None)
    assert (
        found.message == "The mail server refused the probe (MAIL FROM refused: 550 5.7.1 Probes are not welcome here)."
    )
    assert server.connections == 2 and mailboxes.recipients == []  # mx1, then mx2 (the same server here)


async def test_an_internationalised_mailbox_needs_smtputf8(zone: Zone) -> None:
    email = "jörg@bücher.example.com"
    with smtp_mailboxes(Mailboxes(accepted=("jörg@xn--bcher-kva.example.com", email)), enable_SMTPUTF8=False) as (
        _server,
        port,
    ):
        without = await probe_of(zone, port, email)
    assert (without.checked, without.skipped) == (False, "smtputf8_unsupported")
    mailboxes = Mailboxes(accepted=("jörg@bücher.example.com",))
    with smtp_mailboxes(mailboxes, enable_SMTPUTF8=True) as (_server, port):
        found = await probe_of(zone, port, email)
    assert (found.checked, found.code, found.catch_all) == (True, 250, False)
    assert mailboxes.recipients[0] == "jörg@bücher.example.com"


async def test_the_probe_has_a_time_budget(zone: Zone, monkeypatch: pytest.MonkeyPatch) -> None:
    class Slow(Mailboxes):
        async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
            await asyncio.sleep(2)
            return "250 OK"

    monkeypatch.setattr(smtp_probe, "PROBE_BUDGET_S", 0.5)
    with smtp_mailboxes(Slow()) as (_server, port):
        started = time.monotonic()
        found = await probe_of(zone, port, "alice@example.com")
        elapsed = time.monotonic() - started
    assert (found.checked, found.skipped, found.message) == (
        False,
        "unreachable",
        "The mail servers did not answer in time.",
    )
    assert elapsed < 1.5  # the connection is dropped at once, without waiting for a polite QUIT


async def test_a_closed_port_is_unreachable(zone: Zone) -> None:
    found = await probe_of(zone, closed_port(), "alice@example.com")
    assert (found.checked, found.skipped) == (False, "unreachable")


def test_the_examples_validate_and_price() -> None:
    for example in EMAIL_VERIFICATION.examples:
        try:
            validate_email(example.input["email"], check_deliverability=False)
        except EmailNotValidError as exc:  # pragma: no cover - a bad example
            pytest.fail(f"{example.title}: {exc}")
    assert EMAIL_VERIFICATION.price == 2000  # 0.002 USDC
    assert (EMAIL_VERIFICATION.category, EMAIL_VERIFICATION.rate_limit, EMAIL_VERIFICATION.mode) == (
        "verification",
        "paid",
        "inline",
    )
    assert (
        EMAIL_VERIFICATION.payment_header == "payment-signature" and EMAIL_VERIFICATION.path == "/v1/tools/verify/email"
    )
