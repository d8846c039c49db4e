"""The SMTP RCPT probe through the service (HTTP front, SQLite and PostgreSQL), paid from
credits, against real local SMTP servers (aiosmtpd, see `verify_smtp_servers`) that the
local zone's MX hosts (`mx1.example.com`, 127.0.0.1) lead to: an accepted mailbox, a
rejected one, a greylisted one, a catch-all server; and, with the probe off, not asked,
or pointed at a private address, that nothing connects."""

from __future__ import annotations

from typing import Any

import pytest
from verify_dns_zone import Zone
from verify_smtp_servers import Mailboxes, closed_port, smtp_mailboxes

from tollway.testing import credits_session, http_client

PATH = "/v1/tools/verify/email"
PROBE_FROM = "verify@tollway-probe.example.com"


def probe_env(zone: Zone, port: int, **more: str) -> dict[str, str]:
    """The probe on, toward `port`, allowed to reach 127.0.0.1 (the MX hosts' address here)."""
    return zone.env(TOLLWAY_VERIFY_SMTP_PROBE="1", TOLLWAY_VERIFY_SMTP_PORT=str(port), TOLLWAY_VERIFY_SMTP_ALLOW_PRIVATE="true",
                    TOLLWAY_VERIFY_PROBE_FROM=PROBE_FROM, **more)  # fmt: skip


async def verify(kernel: Any, email: str, check_smtp: bool = True) -> dict[str, Any]:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        answer = await client.post(PATH, json={"email": email, "check_smtp": check_smtp}, headers=auth)
        balance = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
    assert answer.status_code == 200, answer.text
    assert balance == "0.998000"  # every probe outcome is a paid answer
    return answer.json()["data"]


async def test_an_accepted_mailbox_is_deliverable(kernel_factory, zone: Zone) -> None:
    mailboxes = Mailboxes(accepted=("alice@example.com",))
    with smtp_mailboxes(mailboxes) as (server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(zone, port))
        data = await verify(kernel, "Alice@Example.com")
    assert (data["result"], data["reason"]) == ("deliverable", "accepted")
    assert data["checks"]["smtp"] == {"checked": True, "skipped": None, "host": "mx1.example.com", "code": 250,
                                      "message": "2.1.5 Recipient OK", "catch_all": False}  # fmt: skip
    assert server.connections == 1
    assert mailboxes.greetings == ["tollway-probe.example.com"] and mailboxes.senders == [PROBE_FROM]
    first, random = mailboxes.recipients
    assert first == "Alice@example.com"  # the normalised address: domain folded, local part as written
    assert random.endswith("@example.com") and len(random.split("@")[0]) == 20  # the catch-all test
    assert mailboxes.data_commands == 0  # nothing was sent


async def test_a_rejected_mailbox_is_undeliverable(kernel_factory, zone: Zone) -> None:
    mailboxes = Mailboxes(accepted=("alice@example.com",))
    with smtp_mailboxes(mailboxes) as (server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(zone, port))
        data = await verify(kernel, "bob@example.com")
    assert (data["result"], data["reason"]) == ("undeliverable", "mailbox_rejected")
    smtp = data["checks"]["smtp"]
    assert (smtp["checked"], smtp["code"], smtp["catch_all"], smtp["message"]) == (
        True,
        550,
        None,
        "5.1.1 No such user here",
    )
    assert mailboxes.recipients == ["bob@example.com"]  # no catch-all test after a rejection
    assert server.connections == 1 and mailboxes.data_commands == 0


async def test_a_rejection_outranks_the_role_flag(kernel_factory, zone: Zone) -> None:
    with smtp_mailboxes(Mailboxes()) as (_server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(zone, port))
        data = await verify(kernel, "info@example.com")
    assert (data["result"], data["reason"], data["checks"]["role"]) == ("undeliverable", "mailbox_rejected", True)


async def test_a_catch_all_server_is_risky(kernel_factory, zone: Zone) -> None:
    mailboxes = Mailboxes(catch_all=True)
    with smtp_mailboxes(mailboxes) as (server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(zone, port))
        data = await verify(kernel, "anyone-at-all@example.com")
    assert (data["result"], data["reason"]) == ("risky", "catch_all")
    smtp = data["checks"]["smtp"]
    assert (smtp["checked"], smtp["code"], smtp["catch_all"]) == (True, 250, True)
    assert len(mailboxes.recipients) == 2 and server.connections == 1


async def test_a_greylisted_mailbox_is_unknown(kernel_factory, zone: Zone) -> None:
    mailboxes = Mailboxes(greylisted=("carol@example.com",))
    with smtp_mailboxes(mailboxes) as (_server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(zone, port))
        data = await verify(kernel, "carol@example.com")
    assert (data["result"], data["reason"]) == ("unknown", "smtp_inconclusive")
    smtp = data["checks"]["smtp"]
    assert (smtp["checked"], smtp["code"], smtp["catch_all"]) == (True, 450, None)
    assert smtp["message"].startswith("4.2.0 Greylisted")


async def test_the_implicit_mx_is_probed_at_the_domains_own_address(kernel_factory, zone: Zone) -> None:
    mailboxes = Mailboxes(accepted=("dora@a-only.example.net",))
    with smtp_mailboxes(mailboxes) as (_server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(zone, port))
        data = await verify(kernel, "dora@a-only.example.net")
    assert (data["result"], data["reason"], data["checks"]["smtp"]["host"]) == (
        "deliverable",
        "accepted",
        "a-only.example.net",
    )


async def test_the_null_sender_is_the_default(kernel_factory, zone: Zone) -> None:
    mailboxes = Mailboxes(accepted=("alice@example.com",))
    with smtp_mailboxes(mailboxes) as (_server, port):
        env = {k: v for k, v in probe_env(zone, port).items() if k != "TOLLWAY_VERIFY_PROBE_FROM"}
        kernel = await kernel_factory(installed={"tollway_verify"}, env=env)
        data = await verify(kernel, "alice@example.com")
    assert data["reason"] == "accepted"
    assert mailboxes.senders == ["<>"]  # MAIL FROM:<> (aiosmtpd reports the null sender so)


@pytest.mark.parametrize(
    ("env", "check_smtp", "skipped", "message"),
    [({"TOLLWAY_VERIFY_SMTP_PROBE": "0"}, True, "probe_disabled", "The mailbox was not probed: this service does not probe mail servers."),
     ({}, False, "not_requested", "The mailbox was not probed: check_smtp was not asked."),
     ({"TOLLWAY_VERIFY_SMTP_ALLOW_PRIVATE": "false"}, True, "private_address",
      "The mail hosts resolve to non-public addresses, which this service does not probe.")],
    ids=["probe-disabled", "not-asked", "private-address"],
)  # fmt: skip
async def test_nothing_connects_when_the_probe_is_not_made(
    kernel_factory, zone: Zone, env, check_smtp, skipped, message
) -> None:
    mailboxes = Mailboxes(accepted=("alice@example.com",))
    with smtp_mailboxes(mailboxes) as (server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env={**probe_env(zone, port), **env})
        data = await verify(kernel, "alice@example.com", check_smtp=check_smtp)
    assert (data["result"], data["reason"]) == ("unknown", "smtp_not_checked")
    assert data["checks"]["smtp"] == {
        "checked": False,
        "skipped": skipped,
        "host": None,
        "code": None,
        "message": message,
        "catch_all": None,
    }
    assert server.connections == 0 and mailboxes.greetings == [] and mailboxes.recipients == []


async def test_the_probe_is_off_unless_the_operator_turns_it_on(kernel_factory, zone: Zone) -> None:
    with smtp_mailboxes(Mailboxes(catch_all=True)) as (server, port):
        env = {k: v for k, v in probe_env(zone, port).items() if k != "TOLLWAY_VERIFY_SMTP_PROBE"}
        kernel = await kernel_factory(installed={"tollway_verify"}, env=env)
        data = await verify(kernel, "alice@example.com")
    assert data["checks"]["smtp"]["skipped"] == "probe_disabled" and server.connections == 0


async def test_a_domain_without_mail_is_not_probed(kernel_factory, fresh_zone: Zone) -> None:
    with smtp_mailboxes(Mailboxes(catch_all=True)) as (server, port):
        kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(fresh_zone, port))
        data = await verify(kernel, "jane@null-mx.example.org")
    assert (data["result"], data["reason"], data["checks"]["smtp"]["skipped"]) == (
        "undeliverable",
        "null_mx",
        "not_applicable",
    )
    assert server.connections == 0 and fresh_zone.asked == [("null-mx.example.org", "MX", "udp")]


async def test_a_mail_server_that_cannot_be_reached_leaves_the_mailbox_unknown(
    kernel_factory, fresh_zone: Zone
) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=probe_env(fresh_zone, closed_port()))
    data = await verify(kernel, "alice@example.com")
    assert (data["result"], data["reason"]) == ("unknown", "smtp_not_checked")
    smtp = data["checks"]["smtp"]
    assert (smtp["checked"], smtp["skipped"], smtp["host"]) == (False, "unreachable", None)
    assert smtp["message"].startswith("No mail host could be reached (mx1.example.com: ")
    # both MX hosts were looked up and tried, best preference first
    assert [q for q in fresh_zone.asked if q[1] == "A"] == [
        ("mx1.example.com", "A", "udp"),
        ("mx2.example.com", "A", "udp"),
    ]
