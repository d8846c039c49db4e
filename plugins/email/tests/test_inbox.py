"""The inbox (both databases): mail sent to an agent's own address arrives through the
SMTP listener and is listed and read by that agent only, with its thread, bodies and
attachments (content round-trips through include_body, stored once however often it comes);
mail to no agent's address is kept by nobody."""
from __future__ import annotations

import asyncio
import base64
from email.message import EmailMessage

import aiosmtplib

from tollway import agent_address
from tollway.testing import credits_session, http_client, reserve_socket
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


async def test_an_agents_inbox(kernel_factory) -> None:
    probe = reserve_socket()
    port = probe.getsockname()[1]
    probe.close()
    kernel = await kernel_factory(installed={"tollway_email"}, env={"TOLLWAY_EMAIL_INBOUND_PORT": str(port)})
    async with http_client(kernel) as client:
        agent_id, headers = await credits_session(client, "1")
        _other, other_headers = await credits_session(client, "1")
        mine = agent_address("agents@tollway.test", agent_id)
        await send(port, mail(mine, "first"))
        await send(port, mail(mine, "second"))
        await send(port, mail("nobody@tollway.test", "stray"))
        listed = (await client.get("/v1/tools/inbox/list", headers=headers)).json()
        full = (await client.get("/v1/tools/inbox/list?include_body=true&limit=1", headers=headers)).json()
        one = (await client.get(f"/v1/tools/inbox/{listed['emails'][1]['id']}?include_body=true", headers=headers)).json()
        others = (await client.get("/v1/tools/inbox/list", headers=other_headers)).json()
        hidden = await client.get(f"/v1/tools/inbox/{listed['emails'][0]['id']}", headers=other_headers)
        bad = await client.get("/v1/tools/inbox/list?limit=0&include_body=maybe", headers=headers)
        blobs = await InboxEmail.raw("SELECT COUNT(*) AS n FROM email_blobs").run()
        strays = await InboxEmail.raw("SELECT COUNT(*) AS n FROM email_inbox WHERE subject = 'stray'").run()
    assert [e["subject"] for e in listed["emails"]] == ["second", "first"] and listed["count"] == 2 and not listed["has_more"]
    assert listed["agent_id"] == agent_id and "body" not in listed["emails"][0]
    assert listed["emails"][0]["from"] == "lee@example.com" and listed["emails"][0]["thread_id"] == "<root@tollway.test>"
    assert listed["emails"][0]["attachments"] == [{"filename": "invoice.pdf", "content_type": "application/pdf", "size": len(PDF)}]
    assert full["has_more"] and full["count"] == 1 and full["emails"][0]["body"] == "Please find the invoice attached."
    assert "<b>invoice</b>" in full["emails"][0]["body_html"]
    assert base64.b64decode(one["attachments"][0]["content"]) == PDF and one["subject"] == "first"
    assert others["emails"] == [] and hidden.status_code == 404
    assert bad.status_code == 400
    assert int(blobs[0]["n"]) == 1 and int(strays[0]["n"]) == 0  # the same attachment stored once; stray mail kept by nobody
