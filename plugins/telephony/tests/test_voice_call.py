"""`voice_call` against the local Twilio stand-in (both databases): the message goes as TwiML
with the text escaped (a `<script>` is spoken as text, never markup); the calls' status
callbacks, signed as Twilio signs them, end in exactly one `voice_completed` with the
evaluation, on the notification and on the Job's result; what cannot be said is refused before
payment; a number Twilio refuses fails the job and refunds it. And the evaluation rule."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from telephony_support import PLUGIN, balance, finished, notifications, post, service
from twilio_standin import TwilioStandIn

from tollway.testing import count_quotes, credits_session, http_client
from tollway_telephony.voice_tool import evaluate, heard_s

CALL = "/v1/tools/voice/call"
MESSAGE = (
    'Your code is <script>alert("x")</script> & it expires at 5 pm, so use it soon please.'  # 15 words: 5 s to say
)


async def test_a_call_speaks_the_escaped_message_and_is_evaluated(kernel_factory, twilio: TwilioStandIn) -> None:
    async with service(kernel_factory, twilio) as client:
        _agent, headers = await credits_session(client, "1")
        heard = (
            await client.post(
                CALL,
                json={"to": "+14155550101", "message": MESSAGE, "goal": "the person hears the code"},
                headers=headers,
            )
        ).json()
        short = (await client.post(CALL, json={"to": "+14155550102", "message": MESSAGE}, headers=headers)).json()
        missed = (await client.post(CALL, json={"to": "+14155550103", "message": "Hello."}, headers=headers)).json()
        jobs = [await finished(client, j["request_id"], headers) for j in (heard, short, missed)]
        assert [j["status"] for j in jobs] == ["completed"] * 3, jobs
        sids = [j["result"]["sid"] for j in jobs]
        assert all(j["result"] == {"sid": sid, "status": "queued"} for j, sid in zip(jobs, sids))

        # the call progresses: nothing is told until it ends
        for sequence, status in enumerate(("initiated", "ringing", "in-progress")):
            assert (await post(client, twilio.call_status(sids[0], status, sequence=sequence))).status_code == 200
        assert await notifications(client, headers, "voice_completed") == []
        forged = await post(client, twilio.call_status(sids[0], "completed", duration_s=40, token="1" * 32))
        assert forged.status_code == 403 and await notifications(client, headers, "voice_completed") == []

        assert (
            await post(client, twilio.call_status(sids[0], "completed", duration_s=14, sequence=3))
        ).status_code == 200
        assert (await post(client, twilio.call_status(sids[1], "completed", duration_s=3))).status_code == 200
        assert (await post(client, twilio.call_status(sids[2], "no-answer", duration_s=0))).status_code == 200
        # a repeated callback of an ended call changes nothing and tells nothing again
        assert (
            await post(client, twilio.call_status(sids[0], "completed", duration_s=14, sequence=3))
        ).status_code == 200
        told = {n["metadata"]["sid"]: n for n in await notifications(client, headers, "voice_completed")}
        results = [
            (await client.get(f"/v1/requests/{j['request_id']}", headers=headers)).json()["result"] for j in jobs
        ]
        left = await balance(client, headers)

    made = twilio.api_calls("Calls")
    assert len(made) == 3 and all(r.authorized for r in made)
    sent = next(r.form for r in made if r.form["To"] == "+14155550101")  # the worker may take the jobs in any order
    assert set(sent) == {"To", "From", "Twiml", "StatusCallback"} and sent["From"] == twilio.from_number
    assert sent["Twiml"] == (
        '<Response><Say>Your code is &lt;script&gt;alert("x")&lt;/script&gt; &amp; it expires at 5 pm, '
        "so use it soon please.</Say></Response>"
    )
    spoken = ET.fromstring(sent["Twiml"])
    assert [e.tag for e in spoken.iter()] == ["Response", "Say"] and spoken.find(
        "Say"
    ).text == MESSAGE  # text, not markup
    assert sent["StatusCallback"].endswith(f"/v1/telephony/twilio/status?ref={heard['request_id']}")

    assert len(told) == 3
    assert told[sids[0]]["metadata"]["evaluation"] == {
        "success": True,
        "reason": "Answered and lasted 14 s, long enough to hear the whole message (5 s). "
        "The goal ('the person hears the code') was not checked: the call speaks the message and hears no answer.",
    }
    assert (
        told[sids[0]]["metadata"]["goal"] == "the person hears the code"
        and told[sids[0]]["metadata"]["duration_s"] == 14
    )
    assert told[sids[0]]["title"] == "Call to +14155550101 succeeded (completed)"
    assert told[sids[1]]["metadata"]["evaluation"] == {
        "success": False,
        "reason": "Answered, but the call lasted 3 s: less than the 5 s the message takes to say.",
    }
    assert told[sids[2]]["metadata"]["evaluation"] == {"success": False, "reason": "Not answered: nobody answered."}
    assert results[0] == {
        "sid": sids[0],
        "status": "completed",
        "duration_s": 14,
        "evaluation": told[sids[0]]["metadata"]["evaluation"],
    }
    assert results[2]["status"] == "no-answer" and results[2]["evaluation"]["success"] is False
    assert left == "0.700000"  # three calls at 0.10


async def test_what_cannot_be_said_is_refused_before_payment(kernel_factory, twilio: TwilioStandIn) -> None:
    kernel = await kernel_factory(installed={PLUGIN}, env=twilio.env())  # no worker: nothing gets that far
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client, "1")
        control = await client.post(CALL, json={"to": "+14155550101", "message": "ring\x07ring"}, headers=headers)
        too_long = await client.post(
            CALL, json={"to": "+14155550101", "message": "<" * 1000}, headers=headers
        )  # 4000 once escaped
        not_e164 = await client.post(
            CALL, json={"to": "0044 20 7946 0000", "message": "hi", "goal": ""}, headers=headers
        )
        left = await balance(client, headers)
        quotes = await count_quotes(kernel)
    assert control.status_code == 400 and control.json()["details"][0]["field"] == "message"
    assert too_long.status_code == 400 and "TwiML" in too_long.json()["message"]
    assert not_e164.status_code == 400 and {d["field"] for d in not_e164.json()["details"]} == {"to", "goal"}
    assert left == "1.000000" and quotes == 0 and twilio.requests == []


async def test_a_number_twilio_refuses_fails_the_call_and_refunds_it(kernel_factory, twilio: TwilioStandIn) -> None:
    twilio.invalid["+14155550199"] = 21211
    async with service(kernel_factory, twilio) as client:
        _agent, headers = await credits_session(client, "1")
        job = (await client.post(CALL, json={"to": "+14155550199", "message": "hi"}, headers=headers)).json()
        failed = await finished(client, job["request_id"], headers)
        left = await balance(client, headers)
    assert failed["status"] == "failed" and failed["error_code"] == "invalid_input" and "21211" in failed["error"]
    assert left == "1.000000"


def test_the_evaluation_rule() -> None:
    assert heard_s(0) == 2 and heard_s(6) == 2 and heard_s(7) == 3 and heard_s(30) == 10
    assert evaluate("completed", 10, None, 30, None).success is True
    assert evaluate("completed", 9, None, 30, None).success is False
    assert (
        evaluate("completed", 60, "machine_end_beep", 30, None).reason
        == "Answered by a machine (machine_end_beep), not a person."
    )
    assert evaluate("completed", 60, "human", 30, None).success is True
    for status, why in (
        ("busy", "the line was busy"),
        ("failed", "the call could not be placed"),
        ("canceled", "the call was canceled before it was answered"),
    ):
        assert evaluate(status, 0, None, 3, None).reason == f"Not answered: {why}."
