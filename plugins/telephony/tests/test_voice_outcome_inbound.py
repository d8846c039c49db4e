"""A call's final outcome is handed once to the service's inbound handlers (both databases):
an `InboundMessage(channel="voice")` from the number called, to the number it was placed
from, `in_reply_to` the call's SID, the verdict in its subject and the evaluation's reason
as its text — after `voice_completed` is written, never for a status that is not final,
never twice for a callback Twilio posts again."""

from __future__ import annotations

from telephony_support import finished, post, service
from test_sms_inbox import Catcher  # an inbound handler that keeps what it is offered
from twilio_standin import TwilioStandIn

from tollway.testing import credits_session

CALL = "/v1/tools/voice/call"


async def test_a_calls_outcome_reaches_the_inbound_handlers_once(kernel_factory, twilio: TwilioStandIn) -> None:
    catcher = Catcher()
    async with service(kernel_factory, twilio, plugins=[("catcher", catcher)]) as client:
        _agent, headers = await credits_session(client, "1")
        accepted = await client.post(CALL, json={"to": "+14155550101", "message": "Hello there."}, headers=headers)
        sid = (await finished(client, accepted.json()["request_id"], headers))["result"]["sid"]
        assert (await post(client, twilio.call_status(sid, "ringing"))).status_code == 200
        assert catcher.got == []
        ended = twilio.call_status(sid, "completed", duration_s=9, sequence=2)
        assert (await post(client, ended)).status_code == 200
        assert (await post(client, ended)).status_code == 200
    [got] = catcher.got
    assert (got.channel, got.sender, got.recipients, got.in_reply_to) == (
        "voice",
        "+14155550101",
        (twilio.from_number,),
        sid,
    )
    assert got.subject == "Call to +14155550101 succeeded (completed, 9 s)"
    assert got.text.startswith("Answered and lasted 9 s")
