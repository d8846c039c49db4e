"""The SMS inbox (both databases): a text to the service's number, posted by the stand-in
as Twilio's signed incoming-message webhook, is kept once for the agent that last texted its
sender (related to that message), listed and read by that agent only, and handed to the
inbound handlers as an `sms` InboundMessage; a stranger's text is kept by nobody; a forged
webhook is refused 403 and nothing is kept. A text's body is private: a bare X-Agent-ID
(anyone who knows the wallet) reads no text, even with proofs log-only."""

from __future__ import annotations

from eth_account import Account
from telephony_support import Catcher, finished, post, service
from twilio_standin import TwilioStandIn

from tollway.testing import credits_session, proof_headers
from tollway_telephony.tables import InboundSms

SEND = "/v1/tools/sms/send"
INBOX = "/v1/tools/sms/inbox"
DANA, LEE, STRANGER = "+14155550101", "+14155550102", "+14155550109"


async def text(client, headers, to: list[str], body: str) -> dict:
    accepted = await client.post(SEND, json={"to": to, "body": body}, headers=headers)
    assert accepted.status_code == 202, accepted.text
    job = await finished(client, accepted.json()["request_id"], headers)
    assert job["status"] == "completed", job
    return {m["to"]: m for m in job["result"]["messages"]}


async def test_replies_reach_the_agent_that_texted(kernel_factory, twilio: TwilioStandIn) -> None:
    catcher = Catcher()
    async with service(kernel_factory, twilio, plugins=[("catcher", catcher)]) as client:
        alice, alice_auth = await credits_session(client, "1")
        bob, bob_auth = await credits_session(client, "1")
        alice_sent = await text(client, alice_auth, [DANA], "Can you make 7 pm?")
        bob_sent = await text(client, bob_auth, [LEE], "Your parcel is ready.")

        reply = twilio.incoming_sms(
            DANA, "Yes, 7 pm works", media=("https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1",)
        )
        first = await post(client, reply)
        again = await post(client, reply)  # Twilio posts the same message again
        stray = await post(client, twilio.incoming_sms(STRANGER, "who is this?"))
        forged = twilio.incoming_sms(LEE, "thanks", token="2" * 32)
        refused = await post(client, forged)
        unsigned = await post(
            client, twilio.incoming_sms(LEE, "thanks"), headers={"content-type": "application/x-www-form-urlencoded"}
        )

        alices = (await client.get(INBOX, headers=alice_auth)).json()
        bobs = (await client.get(INBOX, headers=bob_auth)).json()
        one = await client.get(f"{INBOX}/{alices['messages'][0]['id']}", headers=alice_auth)
        hidden = await client.get(f"{INBOX}/{alices['messages'][0]['id']}", headers=bob_auth)
        bad = await client.get(f"{INBOX}?limit=0", headers=alice_auth)
        kept = await InboundSms.select(InboundSms.sender, InboundSms.agent_id).order_by(InboundSms.received_ms)

        # Bob texts Dana too, later: her next reply is his
        bob_to_dana = await text(client, bob_auth, [DANA], "Dana, it's Bob.")
        await post(client, twilio.incoming_sms(DANA, "Hi Bob"))
        bobs_now = (await client.get(INBOX, headers=bob_auth)).json()
        alices_now = (await client.get(INBOX, headers=alice_auth)).json()

    assert (
        first.status_code == 200
        and first.headers["content-type"].startswith("text/xml")
        and "<Response/>" in first.text
    )
    assert again.status_code == 200 and stray.status_code == 200
    assert refused.status_code == 403 and unsigned.status_code == 403
    assert [(k["sender"], k["agent_id"]) for k in kept] == [
        (DANA, alice),
        (STRANGER, None),
    ]  # once each; the forged one not at all

    assert alices["count"] == 1 and set(alices) == {"messages", "count"}
    [got] = alices["messages"]
    assert got == {
        "id": got["id"],
        "from": DANA,
        "to": twilio.from_number,
        "body": "Yes, 7 pm works",
        "num_media": 1,
        "media_urls": ["https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1"],
        "thread_id": got["thread_id"],
        "related_outbound_id": alice_sent[DANA]["id"],
        "received_at": got["received_at"],
        "created_at": got["created_at"],
    }
    assert got["id"].startswith("smsin_") and got["thread_id"].startswith("thr_")
    assert one.status_code == 200 and one.json() == got
    assert hidden.status_code == 404 and bad.status_code == 400
    assert bobs == {"messages": [], "count": 0} and bob_sent[LEE]["id"]

    [latest] = bobs_now["messages"]
    assert latest["body"] == "Hi Bob" and latest["related_outbound_id"] == bob_to_dana[DANA]["id"]
    assert latest["thread_id"] != got["thread_id"]  # Bob's conversation with Dana, not Alice's
    assert alices_now["count"] == 1

    # every text kept was handed to the inbound handlers once, as an sms message
    assert [(m.channel, m.sender, m.text) for m in catcher.got] == [
        ("sms", DANA, "Yes, 7 pm works"),
        ("sms", STRANGER, "who is this?"),
        ("sms", DANA, "Hi Bob"),
    ]
    assert (
        catcher.got[0].recipients == (twilio.from_number,) and catcher.got[0].message_id == reply.params["MessageSid"]
    )
    assert catcher.got[0].in_reply_to == alice_sent[DANA]["sid"] and catcher.got[1].in_reply_to is None


async def test_texts_need_a_proof_even_when_proofs_are_log_only(kernel_factory, twilio: TwilioStandIn) -> None:
    owner = Account.create()
    async with service(kernel_factory, twilio) as client:
        _agent, token = await credits_session(client, "1", wallet=owner.address)
        await text(client, token, [DANA], "Can you make 7 pm?")
        await post(client, twilio.incoming_sms(DANA, "Yes, 7 pm works"))
        [kept] = (await client.get(INBOX, headers=token)).json()["messages"]
        one = f"{INBOX}/{kept['id']}"
        bare = {"X-Agent-ID": owner.address}
        refused = [
            await client.get(INBOX, headers=bare),
            await client.get(one, headers=bare),
            await client.get(one, headers=proof_headers(owner, scope="read", method="GET", path=INBOX)),
        ]
        listed = await client.get(INBOX, headers=proof_headers(owner, scope="read", method="GET", path=INBOX))
        read = await client.get(one, headers=proof_headers(owner, scope="read", method="GET", path=one))
    assert [r.status_code for r in refused] == [401, 401, 401]
    assert [r.json()["details"]["reason"] for r in refused] == ["missing", "missing", "path_mismatch"]
    assert not any("7 pm works" in r.text or DANA in r.text for r in refused)
    assert listed.status_code == 200 and listed.json()["messages"][0]["body"] == "Yes, 7 pm works"
    assert read.status_code == 200 and read.json()["body"] == "Yes, 7 pm works"
