"""Snapshots of the physical mail tool's public surface (`tollway.testing.PluginSurface`):
its OpenAPI operation and schemas, its MCP listing, and the answers an agent meets before
any letter is made (the 202 acceptance, the refusals of a missing key, of bad input and of
a reused key)."""

from __future__ import annotations

from postal_lob_standin import API_KEY, SENDER

from tollway.testing import PluginSurface, credits_session, http_client
from tollway.testing import normalise as normalised

PATH = "/v1/tools/physical-mail/send"
TO = {"name": "Dana Smith", "line1": "185 Berry St", "city": "San Francisco", "state": "CA", "zip": "94107"}


class TestPostalSurface(PluginSurface):
    plugin = "tollway_postal"
    env = {"TOLLWAY_MAIL_LOB_API_KEY": API_KEY, **SENDER}


async def test_answers_before_a_letter(kernel_factory, snapshot) -> None:
    kernel = await kernel_factory(installed={"tollway_postal"}, env={"TOLLWAY_MAIL_LOB_API_KEY": API_KEY, **SENDER})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "5")
        answers = {
            "no_key": await client.post(PATH, json={"to": TO, "text": "Hello"}, headers=auth),
            "bad_input": await client.post(
                PATH,
                json={
                    "to": {**TO, "zip": "9410", "state": "California"},
                    "text": "Hi",
                    "html": "<p>Hi</p>",
                    "colour": True,
                },
                headers={**auth, "Idempotency-Key": "k-bad"},
            ),
            "unpaid": await client.post(
                PATH, json={"to": TO, "text": "Hello", "color": True}, headers={"Idempotency-Key": "k-quote"}
            ),
            "accepted": await client.post(
                PATH, json={"to": TO, "text": "Hello"}, headers={**auth, "Idempotency-Key": "k-1"}
            ),
            "key_reused": await client.post(
                PATH, json={"to": TO, "text": "Hello again"}, headers={**auth, "Idempotency-Key": "k-1"}
            ),
        }
    job_id = answers["accepted"].json()["request_id"]  # also named inside the acceptance's message
    assert {name: {"status": r.status_code, "body": normalise(r.json())} for name, r in answers.items()} == snapshot
    assert answers["accepted"].json()["message"].count(job_id) == 1


def normalise(body: dict) -> dict:
    """`tollway.testing.normalise`, and the request id inside the acceptance's message too."""
    out = normalised(body)
    if isinstance(body.get("message"), str) and isinstance(body.get("request_id"), str):
        out["message"] = body["message"].replace(body["request_id"], "<request_id>")
    return out
