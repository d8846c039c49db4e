"""The email tools (both databases), against a real local SMTP server: a paid send arrives
DKIM-signed (the signature verifies with dkimpy against the published key) from the agent's
own address, its HTML tracked; opens and clicks through the service's pixel and signed
redirects show on the job's email_tracking; a forged link is refused; the free quote prices
and checks a draft; bad input is refused before payment."""

from __future__ import annotations

import base64
import re

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tollway.helpers import agent_address
from tollway.testing import credits_session, http_client, smtp_server, wait_for_job, worker_for

SEND = "/v1/tools/email/send"


def dkim_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, base64.b64encode(public).decode()


async def finished(client, request_id: str, headers: dict[str, str]) -> dict:
    """The job once it completed or failed (polled every 20 ms, up to 8 s)."""
    return await wait_for_job(client, request_id, headers, tries=400, every_s=0.02)


async def sent(client, body: dict, headers: dict[str, str]) -> tuple[str, dict]:
    """Send `body` (accepted 202) and wait: the job's id and its finished status."""
    accepted = await client.post(SEND, json=body, headers=headers)
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["request_id"]
    return job_id, await finished(client, job_id, headers)


async def test_a_tracked_signed_email(kernel_factory) -> None:
    private, public = dkim_key()
    with smtp_server() as (mail, env):
        env = {
            **env,
            "TOLLWAY_EMAIL_DKIM_DOMAIN": "tollway.test",
            "TOLLWAY_EMAIL_DKIM_SELECTOR": "s1",
            "TOLLWAY_EMAIL_DKIM_PRIVATE_KEY": private,
            "TOLLWAY_EMAIL_PUBLIC_URL": "https://tools.tollway.test",
        }
        kernel = await kernel_factory(installed={"tollway_email"}, env=env)
        worker = worker_for(kernel)
        worker.start()
        try:
            async with http_client(kernel) as client:
                agent_id, headers = await credits_session(client, "1")
                body = {
                    "to": "dana@example.com",
                    "subject": "Your invoice",
                    "text": "Hello Dana, your invoice: https://example.com/inv/42",
                    "html": '<html><body><p>Hello Dana, <a href="https://example.com/inv/42?a=1&amp;b=2">your invoice</a>.</p></body></html>',
                }
                job_id, job = await sent(client, body, headers)
                [got] = mail.messages
                html = got.get_body(("html",)).get_content()
                pixel = re.search(r'src="https://tools.tollway.test(/v1/t/o/[^"]+)"', html).group(1)
                link = re.search(r'href="https://tools.tollway.test(/v1/t/c/[^"]+)"', html).group(1)
                opened = await client.get(pixel)
                await client.get(pixel)
                clicked = await client.get(link, follow_redirects=False)
                forged = await client.get(
                    link[:-3] + ("AAA" if not link.endswith("AAA") else "BBB"), follow_redirects=False
                )
                tracked = (await client.get(f"/v1/requests/{job_id}", headers=headers)).json()
                balance = (await client.get("/v1/balance", headers=headers)).json()
        finally:
            await worker.stop()
    raw = got.as_bytes()
    assert job["status"] == "completed" and job["result"]["from"] == agent_address("agents@tollway.test", agent_id)
    assert got["From"] == job["result"]["from"] and got["Reply-To"] == job["result"]["from"]
    assert dkim.verify(
        raw,
        dnsfunc=lambda name, timeout=5: (
            b"v=DKIM1; k=rsa; p=" + public.encode() if name == b"s1._domainkey.tollway.test." else None
        ),
    )
    assert not dkim.verify(
        raw.replace(b"Your invoice", b"Your invoicE"),
        dnsfunc=lambda name, timeout=5: b"v=DKIM1; k=rsa; p=" + public.encode(),
    )
    assert "https://example.com/inv/42" not in html  # the link passes through the service
    assert (
        opened.status_code == 200 and opened.headers["content-type"] == "image/gif" and opened.content[:6] == b"GIF89a"
    )
    assert clicked.status_code == 302 and clicked.headers["location"] == "https://example.com/inv/42?a=1&b=2"
    assert forged.status_code == 404
    assert tracked["email_tracking"] == {
        "from": job["result"]["from"],
        "to": "dana@example.com",
        "subject": "Your invoice",
        "status": "sent",
        "opens": 2,
        "clicks": 1,
    }
    assert balance["credits_balance"] == "0.980000"


async def test_the_quote_and_bad_input(kernel_factory) -> None:
    with smtp_server() as (mail, env):
        kernel = await kernel_factory(installed={"tollway_email"}, env=env)
        async with http_client(kernel) as client:
            _agent, headers = await credits_session(client, "1")
            quoted = await client.post(
                "/v1/tools/email/quote",
                headers=headers,
                json={
                    "to": "dana@example.com",
                    "subject": "Hi",
                    "text": "t",
                    "html": '<a href="https://a.example/1">1</a><a href="http://b.example/2">2</a>',
                },
            )
            bad = await client.post(
                SEND, headers=headers, json={"to": "not an address", "subject": "", "text": "t", "colour": "red"}
            )
            two_lines = await client.post(
                SEND, headers=headers, json={"to": "dana@example.com", "subject": "a\nBcc: x@example.com", "text": "t"}
            )
            balance = (await client.get("/v1/balance", headers=headers)).json()
    data = quoted.json()["data"]
    assert quoted.status_code == 200 and data["price_usdc"] == "0.020000" and data["links"] == 2 and data["tracked"]
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} == {"to", "subject", "colour"}
    assert two_lines.status_code == 400 and two_lines.json()["details"][0]["field"] == "subject"
    assert balance["credits_balance"] == "1.000000" and mail.messages == []


async def test_content_safety_blocks_before_anything_is_sent(kernel_factory) -> None:
    with smtp_server() as (mail, env):
        env = {
            **env,
            "TOLLWAY_CONTENT_BLOCKLIST": "wire transfer, gift cards",
            "TOLLWAY_CONTENT_MAX_PERSONAL_DATA": "2",
        }
        kernel = await kernel_factory(installed={"tollway_email"}, env=env)
        worker = worker_for(kernel)
        worker.start()
        try:
            async with http_client(kernel) as client:
                _agent, headers = await credits_session(client, "1")
                drafts = {
                    "blocked_term": {
                        "to": "dana@example.com",
                        "subject": "Urgent",
                        "text": "Please send a WIRE Transfer today.",
                    },
                    "personal_data": {
                        "to": "dana@example.com",
                        "subject": "Contacts",
                        "text": "a@example.com, b@example.com, +1 415 555 0100",
                    },
                    "fine": {
                        "to": "dana@example.com",
                        "subject": "Hello",
                        "text": "Transferring the wire to the new office; two addresses: a@example.com, b@example.com.",
                    },
                }
                jobs = {}
                for name, body in drafts.items():
                    jobs[name] = (await client.post(SEND, json=body, headers=headers)).json()["request_id"]
                done = {name: await finished(client, job_id, headers) for name, job_id in jobs.items()}
                balance = (await client.get("/v1/balance", headers=headers)).json()
        finally:
            await worker.stop()
    assert done["blocked_term"]["status"] == "failed" and done["blocked_term"]["error_code"] == "content_blocked"
    assert "wire transfer" in done["blocked_term"]["error"]
    assert (
        done["personal_data"]["error_code"] == "content_blocked"
        and "3 email addresses and phone numbers" in done["personal_data"]["error"]
    )
    assert done["fine"]["status"] == "completed"
    assert [m["Subject"] for m in mail.messages] == ["Hello"]  # the blocked ones never reached the relay
    assert balance["credits_balance"] == "0.980000"  # the two blocked sends were refunded


async def test_a_reply_to_a_sent_email_arrives_in_the_inbox_threaded_to_it(kernel_factory) -> None:
    from email.message import EmailMessage

    import aiosmtplib

    from tollway.testing import reserve_socket

    probe = reserve_socket()
    port = probe.getsockname()[1]
    probe.close()
    with smtp_server() as (mail, env):
        kernel = await kernel_factory(installed={"tollway_email"}, env={**env, "TOLLWAY_EMAIL_INBOUND_PORT": str(port)})
        worker = worker_for(kernel)
        worker.start()
        try:
            async with http_client(kernel) as client:
                _agent, headers = await credits_session(client, "1")
                job_id = (
                    await client.post(
                        SEND,
                        json={"to": "dana@example.com", "subject": "Quote 7", "text": "Our quote."},
                        headers=headers,
                    )
                ).json()["request_id"]
                await finished(client, job_id, headers)
                [sent] = mail.messages
                reply = EmailMessage()
                reply["From"], reply["To"], reply["Subject"] = (
                    "Dana <dana@example.com>",
                    sent["Reply-To"],
                    "Re: Quote 7",
                )
                reply["Message-ID"], reply["In-Reply-To"], reply["References"] = (
                    "<r1@example.com>",
                    sent["Message-ID"],
                    sent["Message-ID"],
                )
                reply.set_content("Accepted, thank you.")
                await aiosmtplib.send(reply, hostname="127.0.0.1", port=port)
                inbox = (await client.get("/v1/tools/inbox/list?include_body=true", headers=headers)).json()
        finally:
            await worker.stop()
    [got] = inbox["emails"]
    assert (
        got["subject"] == "Re: Quote 7" and got["body"] == "Accepted, thank you." and got["from"] == "dana@example.com"
    )
    assert got["thread_id"] == sent["Message-ID"]  # threaded to the message the agent sent
