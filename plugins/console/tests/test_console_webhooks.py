"""The watches and webhooks pages over HTTP (SQLite and PostgreSQL): watches, their deliveries
and the outbox counted by state, a given-up webhook listed with its attempts and last error,
its page, and redelivering it: refused without a session or a valid CSRF token (nothing
changes), queued again due now with a fresh budget and its history kept, a second click
changing nothing, given up again after six more failures, then delivered once the receiver
answers, signed at that moment. No page shows the webhook's secret or its URL's path."""

from __future__ import annotations

import re

from console_support import SeedPlugin, sign_in
from webhooks_support import ENV, HOOK_PATH, FeedPlugin, Seeded, seed, send_until

from tollway import now_ms
from tollway.testing import http_client, webhook_receiver
from tollway_console import plugin as hooks

HOOK_COUNT = re.compile(r'<tr data-state="(\w+)" data-count="(\d+)">')
WATCH_COUNT = re.compile(r'data-watch-state="([\w:]+)" data-count="(\d+)"')
DELIVERY_COUNT = re.compile(r'data-delivery-state="(\w+)" data-count="(\d+)"')
ATTEMPT = re.compile(r'<tr data-attempt="(\d+)" data-status-code="(\d*)">')


def no_secret(html: str, seeded: Seeded) -> None:
    assert seeded.secret not in html and HOOK_PATH not in html


async def test_a_given_up_webhook_is_listed_and_redelivered_through_the_kernel(kernel_factory):
    kernel = await kernel_factory(
        plugins=[("tollway_console", hooks), ("seed", SeedPlugin()), ("feed", FeedPlugin())], env=ENV
    )
    with webhook_receiver(HOOK_PATH) as receiver:
        async with http_client(kernel) as client, http_client(kernel) as stranger:
            seeded = await seed(kernel, client, receiver)
            hook = f"/console/webhooks/{seeded.webhook_id}"
            redeliver = f"{hook}/redeliver"
            assert len(receiver.received) == 6

            # No session: every page and the action answer 303 to sign-in, and nothing moves.
            for answer in (
                await stranger.get("/console/webhooks"),
                await stranger.get(hook),
                await stranger.post(redeliver, data={"csrf": "0" * 64}),
            ):
                assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in"
            csrf = await sign_in(client)

            listing = (await client.get("/console/webhooks")).text
            assert dict(HOOK_COUNT.findall(listing)) == {"abandoned": "1"}
            assert dict(WATCH_COUNT.findall(listing)) == {"deleted": "1", "paused:cap": "1", "running": "1"}
            assert dict(DELIVERY_COUNT.findall(listing)) == {"delivered": "2", "pending": "1"}
            row = re.search(
                rf'<tr data-webhook="{seeded.webhook_id}" data-state="abandoned" data-attempts="6">.*', listing
            )
            assert row and "HTTP 500" in row.group(0) and "http://127.0.0.1:" in row.group(0)
            assert "watch.change" in row.group(0)
            sent = f'<tr data-delivery="{seeded.webhook_id}" data-state="delivered"><td><a href="{hook}">'
            assert sent in listing  # the watch delivery links the webhook it sent
            listed = f'data-webhook="{seeded.webhook_id}"'
            assert listed in (await client.get("/console/webhooks?state=abandoned")).text
            assert listed not in (await client.get("/console/webhooks?state=delivered")).text
            no_secret(listing, seeded)

            page = (await client.get(hook)).text
            assert ATTEMPT.findall(page) == [(str(n), "500") for n in range(1, 7)]
            assert 'data-state="abandoned"' in page and f'action="{redeliver}"' in page
            no_secret(page, seeded)

            # A missing or forged CSRF token is refused; the webhook stays given up.
            for fields in ({}, {"csrf": "0" * 64}, {"csrf": csrf[:-1] + ("0" if csrf[-1] != "0" else "1")}):
                refused = await client.post(redeliver, data=fields)
                assert refused.status_code == 403
            assert (await kernel.platform.webhook_entry(seeded.webhook_id))["state"] == "abandoned"
            assert len(receiver.received) == 6

            # Redelivered: pending, due now, six more attempts, its six attempts kept.
            asked = now_ms()
            queued = await client.post(redeliver, data={"csrf": csrf})
            assert queued.status_code == 303 and queued.headers["location"] == hook
            entry = await kernel.platform.webhook_entry(seeded.webhook_id)
            assert (entry["state"], entry["attempts"], entry["budget_from"], entry["attempts_left"]) == (
                "pending",
                6,
                6,
                6,
            )
            assert asked - 1000 <= _ms(entry["next_attempt_at"]) <= now_ms()
            assert len(entry["history"]) == 6
            page = (await client.get(hook)).text
            assert 'data-state="pending"' in page and "(6 left)" in page and f'action="{redeliver}"' not in page

            # A second click changes nothing and says why.
            again = await client.post(redeliver, data={"csrf": csrf})
            assert again.status_code == 409 and "already queued" in again.text
            assert await kernel.platform.webhook_entry(seeded.webhook_id) == entry

            # Still failing: given up again after six more attempts (7 to 12).
            entry = await send_until(kernel, seeded.webhook_id, "abandoned")
            assert entry["attempts"] == 12 and [a["attempt"] for a in entry["history"]] == list(range(1, 13))

            # The receiver is back: redelivered, sent once, signed at sending time, delivered.
            assert (await client.post(redeliver, data={"csrf": csrf})).status_code == 303
            receiver.status = 200
            sent_after = now_ms() // 1000
            entry = await send_until(kernel, seeded.webhook_id, "delivered")
            assert entry["attempts"] == 13 and entry["history"][-1]["status_code"] == 200
            headers, body = receiver.received[-1]
            assert len(receiver.received) == 13 and headers["webhook-id"] == seeded.webhook_id
            assert kernel.platform.verify_webhook(seeded.secret, body, headers["x-service-signature"])
            assert int(headers["x-service-signature"].split(",")[0].removeprefix("t=")) >= sent_after

            done = await client.post(redeliver, data={"csrf": csrf})
            assert done.status_code == 409 and "was delivered" in done.text
            listing = (await client.get("/console/webhooks")).text
            assert dict(HOOK_COUNT.findall(listing)) == {"delivered": "1"}
            no_secret(listing, seeded)
            no_secret((await client.get(hook)).text, seeded)
            assert (await client.get("/console/webhooks/dlv_nosuchhook")).status_code == 404
            assert (
                await client.post("/console/webhooks/dlv_nosuchhook/redeliver", data={"csrf": csrf})
            ).status_code == 404


def _ms(iso: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
