"""The inbox (both databases): mail sent to an agent's own address arrives through the
SMTP listener and is listed and read by that agent only, with its thread, bodies and
attachments (content round-trips through include_body, stored once however often it comes);
mail to no agent's address is kept by nobody. Bodies and attachments are private: a bare
X-Agent-ID (anyone who knows the wallet) lists subjects in log-only mode but never bodies."""

from __future__ import annotations

import asyncio
import base64
from email.message import EmailMessage

import aiosmtplib
from eth_account import Account

from tollway.helpers import agent_address
from tollway.testing import credits_session, http_client, proof_headers, reserve_socket
from tollway_email.inbox import InboxEmail

PDF = b"%PDF-1.4 pretend invoice \x00\x01\x02" * 100


def mail(to: str, subject: str, *, attach: bool = True) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Lee <lee@example.com>"
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{subject.replace(' ', '-')}@example.com>"
    msg["References"] = "<root@tollway.test>"
    msg.set_content("Please find the invoice attached.")
    msg.add_alternative("<p>Please find the <b>invoice</b> attached.</p>", subtype="html")
    if attach:
        msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="invoice.pdf")
    return msg


async def send(port: int, msg: EmailMessage) -> None:
    for _ in range(200):
        try:
            await aiosmtplib.send(msg, hostname="127.0.0.1", port=port)
            return
        except (OSError, aiosmtplib.SMTPConnectError):
            await asyncio.sleep(0.01)
    raise AssertionError("the listener did not start")


async def inbox_kernel(kernel_factory) -> tuple:
    probe = reserve_socket()
    port = probe.getsockname()[1]
    probe.close()
    return await kernel_factory(installed={"tollway_email"}, env={"TOLLWAY_EMAIL_INBOUND_PORT": str(port)}), port


async def test_an_agents_inbox(kernel_factory) -> None:
    kernel, port = await inbox_kernel(kernel_factory)
    async with http_client(kernel) as client:
        agent_id, headers = await credits_session(client, "1")
        _other, other_headers = await credits_session(client, "1")
        mine = agent_address("agents@tollway.test", agent_id)
        await send(port, mail(mine, "first"))
        await send(port, mail(mine, "second"))
        await send(port, mail("nobody@tollway.test", "stray"))
        listed = (await client.get("/v1/tools/inbox/list", headers=headers)).json()
        full = (await client.get("/v1/tools/inbox/list?include_body=true&limit=1", headers=headers)).json()
        one = (
            await client.get(f"/v1/tools/inbox/{listed['emails'][1]['id']}?include_body=true", headers=headers)
        ).json()
        others = (await client.get("/v1/tools/inbox/list", headers=other_headers)).json()
        hidden = await client.get(f"/v1/tools/inbox/{listed['emails'][0]['id']}", headers=other_headers)
        bad = await client.get("/v1/tools/inbox/list?limit=0&include_body=maybe", headers=headers)
        blobs = await InboxEmail.raw("SELECT COUNT(*) AS n FROM email_blobs").run()
        strays = await InboxEmail.raw("SELECT COUNT(*) AS n FROM email_inbox WHERE subject = 'stray'").run()
    assert (
        [e["subject"] for e in listed["emails"]] == ["second", "first"]
        and listed["count"] == 2
        and not listed["has_more"]
    )
    assert listed["agent_id"] == agent_id and "body" not in listed["emails"][0]
    assert (
        listed["emails"][0]["from"] == "lee@example.com" and listed["emails"][0]["thread_id"] == "<root@tollway.test>"
    )
    assert listed["emails"][0]["attachments"] == [
        {"filename": "invoice.pdf", "content_type": "application/pdf", "size": len(PDF)}
    ]
    assert full["has_more"] and full["count"] == 1 and full["emails"][0]["body"] == "Please find the invoice attached."
    assert "<b>invoice</b>" in full["emails"][0]["body_html"]
    assert base64.b64decode(one["attachments"][0]["content"]) == PDF and one["subject"] == "first"
    assert others["emails"] == [] and hidden.status_code == 404
    assert bad.status_code == 400
    assert (
        int(blobs[0]["n"]) == 1 and int(strays[0]["n"]) == 0
    )  # the same attachment stored once; stray mail kept by nobody


async def test_bodies_and_attachments_need_a_proof_even_when_proofs_are_log_only(kernel_factory) -> None:
    kernel, port = await inbox_kernel(kernel_factory)
    owner = Account.create()
    bare = {"X-Agent-ID": owner.address}
    async with http_client(kernel) as client:
        agent_id, _token = await credits_session(client, "1", wallet=owner.address)
        await send(port, mail(agent_address("agents@tollway.test", agent_id), "invoice"))
        listed = await client.get("/v1/tools/inbox/list", headers=bare)
        email_id = listed.json()["emails"][0]["id"]
        one = f"/v1/tools/inbox/{email_id}"
        refused = [
            await client.get("/v1/tools/inbox/list?include_body=true", headers=bare),
            await client.get(f"{one}?include_body=true", headers=bare),
            await client.get(
                f"{one}?include_body=true",
                headers=proof_headers(owner, scope="read", method="GET", path="/v1/tools/inbox/list"),
            ),
        ]
        headline = await client.get(one, headers=bare)
        proved_list = await client.get(
            "/v1/tools/inbox/list?include_body=true",
            headers=proof_headers(owner, scope="read", method="GET", path="/v1/tools/inbox/list"),
        )
        proved_one = await client.get(
            f"{one}?include_body=true", headers=proof_headers(owner, scope="read", method="GET", path=one)
        )
    assert (
        listed.status_code == 200
        and listed.json()["emails"][0]["subject"] == "invoice"
        and "body" not in listed.json()["emails"][0]
    )
    assert (
        headline.status_code == 200
        and "body" not in headline.json()
        and "content" not in headline.json()["attachments"][0]
    )
    assert [r.status_code for r in refused] == [401, 401, 401]
    assert all(r.json()["error"] == "invalid_agent_proof" for r in refused)
    assert [r.json()["details"]["reason"] for r in refused] == ["missing", "missing", "path_mismatch"]
    pdf = base64.b64encode(PDF).decode()
    assert not any("invoice attached" in r.text or pdf[:40] in r.text for r in refused)
    assert (
        proved_list.status_code == 200
        and proved_list.json()["emails"][0]["body"] == "Please find the invoice attached."
    )
    assert proved_one.status_code == 200 and base64.b64decode(proved_one.json()["attachments"][0]["content"]) == PDF
