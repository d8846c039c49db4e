"""`email_verification` through the service (HTTP front, SQLite and PostgreSQL), paid from
credits, against the local DNS zone of `verify_dns_zone`: each kind of domain gives its
result, reason and checks; role and free-mail flags; syntax failures are paid answers
that ask no DNS; bad input is refused before payment naming every field; a resolver that
does not answer fails the call uncharged."""

from __future__ import annotations

from typing import Any

import pytest
from verify_dns_zone import Zone
from verify_smtp_servers import closed_port

from tollway.testing import count_quotes, count_receipts, credits_session, http_client

PATH = "/v1/tools/verify/email"
PRICE = 0.002
EXAMPLE_MX = [{"host": "mx1.example.com", "preference": 10}, {"host": "mx2.example.com", "preference": 20}]
NOT_REQUESTED = {"checked": False, "skipped": "not_requested", "host": None, "code": None,
                 "message": "The mailbox was not probed: check_smtp was not asked.", "catch_all": None}  # fmt: skip


def domain(
    exists: bool = True, mx: list[dict[str, Any]] | None = None, implicit_mx: bool = False, null_mx: bool = False
) -> dict[str, Any]:
    accepts = exists and not null_mx and bool(mx or implicit_mx)
    return {"exists": exists, "accepts_mail": accepts, "mx": mx or [], "implicit_mx": implicit_mx, "null_mx": null_mx}


async def verify(kernel: Any, body: dict[str, Any]) -> tuple[Any, str]:
    """One paid call from a fresh agent with 1 USDC of credits: the answer and the balance after."""
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        answer = await client.post(PATH, json=body, headers=auth)
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
    return answer, balance


# (email, result, reason, domain check, disposable, role, free)
CASES = [
    pytest.param("jane.doe@example.com", "unknown", "smtp_not_checked", domain(mx=EXAMPLE_MX), False, False, False, id="mx-records"),
    pytest.param("jane@a-only.example.net", "unknown", "smtp_not_checked", domain(implicit_mx=True), False, False, False, id="implicit-mx"),
    pytest.param("jane@null-mx.example.org", "undeliverable", "null_mx", domain(null_mx=True), False, False, False, id="null-mx"),
    pytest.param("jane@no-mail.example.com", "undeliverable", "no_mail_server", domain(), False, False, False, id="no-mail-server"),
    pytest.param("jane@gone.example.com", "undeliverable", "no_such_domain", domain(exists=False), False, False, False, id="nxdomain"),
    pytest.param("jane@mailinator.com", "risky", "disposable", domain(mx=[{"host": "mail.mailinator.com", "preference": 10}]),
                 True, False, False, id="disposable"),
    pytest.param("jane@inbox.mailinator.com", "risky", "disposable", domain(mx=[{"host": "mail.mailinator.com", "preference": 10}]),
                 True, False, False, id="disposable-parent-domain"),
    pytest.param("jane@fresh-throwaway.com", "risky", "disposable", domain(mx=[{"host": "mx.guerrillamail.com", "preference": 10}]),
                 True, False, False, id="disposable-mail-host"),
    pytest.param("info@example.com", "risky", "role_account", domain(mx=EXAMPLE_MX), False, True, False, id="role"),
    pytest.param("No-Reply+build@example.com", "risky", "role_account", domain(mx=EXAMPLE_MX), False, True, False, id="role-folded"),
    pytest.param("someone@gmail.com", "unknown", "smtp_not_checked", domain(mx=[{"host": "gmail-smtp-in.l.google.com", "preference": 5}]),
                 False, False, True, id="free-mail"),
    pytest.param("support@gmail.com", "risky", "role_account", domain(mx=[{"host": "gmail-smtp-in.l.google.com", "preference": 5}]),
                 False, True, True, id="role-at-free-mail"),
    pytest.param("info@null-mx.example.org", "undeliverable", "null_mx", domain(null_mx=True), False, True, False, id="undeliverable-beats-role"),
]  # fmt: skip


@pytest.mark.parametrize(("email", "result", "reason", "checked_domain", "disposable", "role", "free"), CASES)
async def test_each_kind_of_domain(
    kernel_factory, zone: Zone, email, result, reason, checked_domain, disposable, role, free
) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=zone.env())
    answer, balance = await verify(kernel, {"email": email})
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["tool"] == "email_verification" and data["status"] == "completed" and data["receipt_id"]
    assert (data["email"], data["result"], data["reason"]) == (email, result, reason)
    checks = data["checks"]
    assert checks["domain"] == checked_domain
    assert (checks["disposable"], checks["role"], checks["free"]) == (disposable, role, free)
    assert checks["syntax"]["valid"] is True and checks["syntax"]["error"] is None
    assert checks["smtp"] == NOT_REQUESTED
    assert (
        data["evidence"]["source"] == "DNS"
        and data["evidence"]["source_kind"] == "public"
        and data["evidence"]["as_of"] is None
    )
    assert float(balance) == pytest.approx(1 - PRICE)  # charged once, the price


async def test_the_address_is_normalised_and_the_idna_domain_is_asked(kernel_factory, fresh_zone: Zone) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=fresh_zone.env())
    answer, _ = await verify(kernel, {"email": " Jörg.Müller@BÜCHER.example.com "})
    data = answer.json()["data"]
    assert data["email"] == " Jörg.Müller@BÜCHER.example.com "  # echoed as given
    assert data["normalized"] == "Jörg.Müller@bücher.example.com"  # the domain folded, the local part kept
    assert data["checks"]["syntax"] == {
        "valid": True, "local_part": "Jörg.Müller", "domain": "bücher.example.com", "ascii_domain": "xn--bcher-kva.example.com",
        "ascii_email": None, "smtputf8": True, "error": None,
    }  # fmt: skip
    assert data["checks"]["domain"]["mx"] == [{"host": "mx1.example.com", "preference": 10}]
    assert fresh_zone.asked == [("xn--bcher-kva.example.com", "MX", "udp")]
    assert (data["result"], data["reason"]) == ("unknown", "smtp_not_checked")


async def test_a_large_answer_is_asked_again_over_tcp(kernel_factory, fresh_zone: Zone) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=fresh_zone.env())
    answer, _ = await verify(kernel, {"email": "jane@many-mx.example.com"})
    mx = answer.json()["data"]["checks"]["domain"]["mx"]
    assert [m["preference"] for m in mx] == list(range(1, 41)) and mx[0]["host"] == "mx01.many-mx.example.com"
    assert fresh_zone.asked == [("many-mx.example.com", "MX", "udp"), ("many-mx.example.com", "MX", "tcp")]


@pytest.mark.parametrize(
    "email",
    ["not-an-address", "jane..doe@example.com", "jane@localhost", "jane@example", "jane@[127.0.0.1]", "jane doe@example.com",
     '"jane"@example.com', "jane@exa_mple.com", "jane@example.test", "@example.com", "jane@"],
)  # fmt: skip
async def test_a_malformed_address_is_a_paid_answer_that_asks_no_dns(
    kernel_factory, fresh_zone: Zone, email: str
) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=fresh_zone.env())
    answer, balance = await verify(kernel, {"email": email, "check_smtp": True})
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert (data["result"], data["reason"], data["normalized"], data["evidence"]) == (
        "undeliverable",
        "invalid_syntax",
        None,
        None,
    )
    syntax = data["checks"]["syntax"]
    assert syntax["valid"] is False and syntax["error"] and syntax["ascii_domain"] is None
    assert data["checks"]["domain"] is None and not (
        data["checks"]["disposable"] or data["checks"]["role"] or data["checks"]["free"]
    )
    assert data["checks"]["smtp"]["skipped"] == "not_applicable"
    assert fresh_zone.asked == []
    assert float(balance) == pytest.approx(1 - PRICE)


@pytest.mark.parametrize(
    ("body", "fields"),
    [({}, {"email"}),
     ({"email": "ab"}, {"email"}),
     ({"email": "j" * 309 + "@example.com"}, {"email"}),  # 321 characters
     ({"email": "jane@example.com", "colour": "red"}, {"colour"}),
     ({"email": 42, "check_smtp": "yes"}, {"email", "check_smtp"}),
     ({"email": "x", "check_smtp": 1, "mx": True}, {"email", "check_smtp", "mx"})],
)  # fmt: skip
async def test_bad_input_is_400_naming_every_field_before_payment(
    kernel_factory, fresh_zone: Zone, body, fields
) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=fresh_zone.env())
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        for headers in ({}, auth):  # neither a quote nor a credits charge
            resp = await client.post(PATH, json=body, headers=headers)
            assert resp.status_code == 400, resp.text
            payload = resp.json()
            assert payload["error"] == "invalid_request"
            assert {d["field"] for d in payload["details"]} == fields
            assert "PAYMENT-REQUIRED" not in resp.headers
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
    assert balance == "1.000000"
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0 and fresh_zone.asked == []


@pytest.mark.parametrize(
    ("email", "reason", "asked"),
    [
        ("jane@silent.example.com", "dns_timeout", "silent.example.com"),
        ("jane@broken.example.com", "dns_error", "broken.example.com"),
    ],
)
async def test_a_resolver_that_does_not_answer_fails_uncharged(
    kernel_factory, fresh_zone: Zone, email, reason, asked
) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=fresh_zone.env())
    answer, balance = await verify(kernel, {"email": email})
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["error"] == "provider_unavailable" and body["details"] == {"reason": reason, "domain": asked}
    assert asked in body["message"] and "nothing was charged" in body["message"]
    assert balance == "1.000000"  # taken, then given back
    assert {name for name, _, _ in fresh_zone.asked} == {asked}


async def test_a_resolver_that_cannot_be_reached_fails_uncharged(kernel_factory, zone: Zone) -> None:
    env = {**zone.env(), "TOLLWAY_VERIFY_DNS_PORT": str(closed_port())}
    kernel = await kernel_factory(installed={"tollway_verify"}, env=env)
    answer, balance = await verify(kernel, {"email": "jane.doe@example.com"})
    assert answer.status_code == 503, answer.text
    assert answer.json()["details"] == {"reason": "dns_timeout", "domain": "example.com"}
    assert balance == "1.000000"


@pytest.mark.parametrize(
    ("env", "variable"),
    [({"TOLLWAY_VERIFY_DNS_PORT": "fifty-three"}, "TOLLWAY_VERIFY_DNS_PORT"),
     ({"TOLLWAY_VERIFY_NAMESERVERS": "dns.example.com"}, "TOLLWAY_VERIFY_NAMESERVERS"),
     ({"TOLLWAY_VERIFY_DNS_TIMEOUT_S": "0"}, "TOLLWAY_VERIFY_DNS_TIMEOUT_S"),
     ({"TOLLWAY_VERIFY_SMTP_PROBE": "maybe"}, "TOLLWAY_VERIFY_SMTP_PROBE")],
)  # fmt: skip
async def test_a_misconfigured_service_fails_uncharged_naming_the_variable(
    kernel_factory, zone: Zone, env, variable
) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env={**zone.env(), **env})
    answer, balance = await verify(kernel, {"email": "jane.doe@example.com"})
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["error"] == "provider_unavailable" and body["details"] == {
        "reason": "misconfigured",
        "settings": [variable],
    }
    assert variable in body["message"] and balance == "1.000000"
