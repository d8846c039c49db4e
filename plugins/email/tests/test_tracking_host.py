"""Tracking on a host of its own (TOLLWAY_EMAIL_TRACKING_URL), so that a click redirect to
wherever an agent's message linked is never served under the API's host name: the links and
the pixel of a sent message point at the tracking host, which redirects and counts; the API
host refuses the tracking paths (404, nothing counted); the tracking host refuses every other
path (404), credentials or not. Both databases, a real SMTP server."""

from __future__ import annotations

import re

from test_email_send import sent

from tollway.testing import credits_session, http_client, smtp_server, worker_for

SEND = "/v1/tools/email/send"
TRACKING = "https://t.tollway.test"


async def test_tracking_is_served_on_its_own_host_and_nothing_else_is(kernel_factory) -> None:
    with smtp_server() as (mail, env):
        # a bare host name: links are https:// on it
        env = {
            **env,
            "TOLLWAY_EMAIL_PUBLIC_URL": "https://api.tollway.test",
            "TOLLWAY_EMAIL_TRACKING_URL": "t.tollway.test",
        }
        kernel = await kernel_factory(installed={"tollway_email"}, env=env)
        worker = worker_for(kernel)
        worker.start()
        try:
            async with http_client(kernel) as client:  # the API host: http://testserver.local
                _agent, headers = await credits_session(client, "1")
                body = {
                    "to": "dana@example.com",
                    "subject": "Your invoice",
                    "text": "Hello Dana.",
                    "html": '<p>Hello Dana, <a href="https://evil.example/phish">your invoice</a>.</p>',
                }
                job_id, job = await sent(client, body, headers)
                html = mail.messages[0].get_body(("html",)).get_content()
                link = re.search(r'href="https://t\.tollway\.test(/v1/t/c/[^"]+)"', html).group(1)
                pixel = re.search(r'src="https://t\.tollway\.test(/v1/t/o/[^"]+)"', html).group(1)
                on_api = {"click": await client.get(link, follow_redirects=False), "pixel": await client.get(pixel)}
                clicked = await client.get(TRACKING + link, follow_redirects=False)
                opened = await client.get(TRACKING + pixel)
                # the Host header decides, whatever its case or port
                again = await client.get(link, headers={"Host": "T.Tollway.Test:443"}, follow_redirects=False)
                elsewhere = {
                    "balance": await client.get(TRACKING + "/v1/balance", headers=headers),
                    "job": await client.get(f"{TRACKING}/v1/requests/{job_id}", headers=headers),
                    "quote": await client.post(TRACKING + "/v1/tools/email/quote", json=body, headers=headers),
                    "send": await client.post(TRACKING + SEND, json=body, headers=headers),
                    "inbox": await client.get(TRACKING + "/v1/tools/inbox/list", headers=headers),
                    "healthz": await client.get(TRACKING + "/healthz"),
                    "schema": await client.get(TRACKING + "/schema/openapi.json"),
                }
                tracked = (await client.get(f"/v1/requests/{job_id}", headers=headers)).json()["email_tracking"]
                api_still = await client.get("/v1/balance", headers=headers)
        finally:
            await worker.stop()
    assert job["status"] == "completed"
    assert "https://api.tollway.test" not in html and "evil.example" not in html
    assert {name: answer.status_code for name, answer in on_api.items()} == {"click": 404, "pixel": 404}
    assert "location" not in on_api["click"].headers
    assert clicked.status_code == 302 and clicked.headers["location"] == "https://evil.example/phish"
    assert opened.status_code == 200 and opened.content[:6] == b"GIF89a"
    assert again.status_code == 302 and again.headers["location"] == "https://evil.example/phish"
    assert {name: answer.status_code for name, answer in elsewhere.items()} == dict.fromkeys(elsewhere, 404)
    assert elsewhere["balance"].json()["error"] == "not_found"
    assert len(mail.messages) == 1  # the send on the tracking host sent nothing
    assert (tracked["opens"], tracked["clicks"]) == (1, 2)  # only what reached the tracking host counted
    assert api_still.status_code == 200 and api_still.json()["credits_balance"] == "0.980000"


async def test_unset_the_api_host_serves_tracking_under_the_public_url(kernel_factory) -> None:
    """The embedded default: no tracking host, links under TOLLWAY_EMAIL_PUBLIC_URL, any host serves them."""
    with smtp_server() as (mail, env):
        kernel = await kernel_factory(
            installed={"tollway_email"}, env={**env, "TOLLWAY_EMAIL_PUBLIC_URL": "https://api.tollway.test"}
        )
        worker = worker_for(kernel)
        worker.start()
        try:
            async with http_client(kernel) as client:
                _agent, headers = await credits_session(client, "1")
                await sent(
                    client,
                    {
                        "to": "dana@example.com",
                        "subject": "Hi",
                        "text": "t",
                        "html": '<a href="https://example.com/a">a</a>',
                    },
                    headers,
                )
                html = mail.messages[0].get_body(("html",)).get_content()
                link = re.search(r'href="https://api\.tollway\.test(/v1/t/c/[^"]+)"', html).group(1)
                clicked = await client.get(link, follow_redirects=False)
                balance = await client.get("https://api.tollway.test/v1/balance", headers=headers)
        finally:
            await worker.stop()
    assert clicked.status_code == 302 and clicked.headers["location"] == "https://example.com/a"
    assert balance.status_code == 200
