"""Each agent's own number, against the Twilio stand-in (both databases): bought on the first
send through Twilio's AvailablePhoneNumbers and IncomingPhoneNumbers resources, reused after,
its month's cost on the receipt of the send that bought it; texts and calls to it routed to its
agent; two first sends at once buy one number; `phone_expiring` before an idle number is
released (time moved by calling the periodic task's function with a `now`), then released and
replaced on the next send; the operator's monthly cap refuses a new number and the send is
refunded, as is a send whose number could not be bought."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from eth_account import Account
from telephony_support import PLUGIN, Catcher, balance, finished, notifications, post
from twilio_standin import INBOUND_CALL_PATH, INBOUND_PATH, PUBLIC_URL, TwilioStandIn

from tollway import now_ms
from tollway.testing import count_receipts, credits_session, http_client, pay_402, provider_cost_of, worker_for
from tollway_telephony import numbers
from tollway_telephony.tables import PhoneNumber

SEND, CALL, INBOX = "/v1/tools/sms/send", "/v1/tools/voice/call", "/v1/tools/sms/inbox"
DANA, LEE, STRANGER = "+14155550101", "+14155550102", "+14155550109"
SMS_COST, CALL_COST, NUMBER_COST = 8_300, 14_000, 1_150_000  # the defaults, micro-USDC
DAY_MS = 86_400_000


@contextlib.asynccontextmanager
async def service(
    kernel_factory: Any, twilio: TwilioStandIn, *, workers: int = 1, catcher: Catcher | None = None, **env: str
) -> AsyncIterator[Any]:
    """(kernel, client) of a started service whose agents buy numbers of their own."""
    kernel = await kernel_factory(
        installed={PLUGIN},
        env={**twilio.env(agent_numbers=True), **env},
        plugins=[("catcher", catcher)] if catcher is not None else None,
    )
    running = [worker_for(kernel) for _ in range(workers)]
    for worker in running:
        worker.start()
    try:
        async with http_client(kernel) as client:
            yield kernel, client
    finally:
        for worker in running:
            await worker.stop()


async def accepted(client: Any, headers: dict[str, str], path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await client.post(path, json=body, headers=headers)
    assert answer.status_code == 202, answer.text
    return answer.json()


async def text(client: Any, headers: dict[str, str], to: str, body: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the acceptance, the finished job) of one text."""
    job = await accepted(client, headers, SEND, {"to": [to], "body": body})
    return job, await finished(client, job["request_id"], headers)


def sent_from(twilio: TwilioStandIn, resource: str = "Messages") -> list[str]:
    return [r.form["From"] for r in twilio.api_calls(resource)]


async def test_a_number_is_bought_on_first_send_reused_and_routes_inbound(
    kernel_factory, twilio: TwilioStandIn
) -> None:
    catcher = Catcher()
    async with service(kernel_factory, twilio, catcher=catcher) as (_kernel, client):
        alice, alice_auth = await credits_session(client, "1")
        bob, bob_auth = await credits_session(client, "1")
        first, first_job = await text(client, alice_auth, DANA, "Can you make 7 pm?")
        searched, bought = twilio.number_calls("GET"), twilio.number_calls("POST")
        second, second_job = await text(client, alice_auth, DANA, "Or 8 pm?")
        call = await accepted(client, alice_auth, CALL, {"to": LEE, "message": "Your table is ready."})
        call_job = await finished(client, call["request_id"], alice_auth)
        _, bob_job = await text(client, bob_auth, LEE, "Your parcel is ready.")
        costs = [await provider_cost_of(j["receipt_id"]) for j in (first, second, call)]
        owned = twilio.numbers_owned()
        rows = await PhoneNumber.select().order_by(PhoneNumber.created_ms)

        alice_number, bob_number = rows[0]["phone_number"], rows[1]["phone_number"]
        # replies to Alice's number are hers (the second from someone she never texted), Bob's are his
        reply = twilio.incoming_sms(DANA, "8 works", to=alice_number)
        assert (await post(client, reply)).status_code == 200
        assert (await post(client, twilio.incoming_sms(STRANGER, "who is this?", to=alice_number))).status_code == 200
        assert (await post(client, twilio.incoming_sms(LEE, "thanks", to=bob_number))).status_code == 200
        rang = await post(client, twilio.incoming_call(STRANGER, bob_number))
        forged = await post(client, twilio.incoming_call(STRANGER, bob_number, token="3" * 32))
        alices = (await client.get(INBOX, headers=alice_auth)).json()["messages"]
        bobs = (await client.get(INBOX, headers=bob_auth)).json()["messages"]
        left = await balance(client, alice_auth)
        got = catcher.got

    # bought once, on the first send: a search of US local numbers taking texts and calls, then the purchase
    [search] = searched
    assert search.authorized and search.path.startswith(
        f"/2010-04-01/Accounts/{twilio.account_sid}/AvailablePhoneNumbers/US/Local.json?"
    )
    assert "SmsEnabled=true" in search.path and "VoiceEnabled=true" in search.path
    [purchase] = bought
    assert purchase.path == f"/2010-04-01/Accounts/{twilio.account_sid}/IncomingPhoneNumbers.json"
    assert purchase.form["PhoneNumber"] == alice_number == "+14155557000"
    assert purchase.form["SmsUrl"] == PUBLIC_URL + INBOUND_PATH and purchase.form["SmsMethod"] == "POST"
    assert purchase.form["VoiceUrl"] == PUBLIC_URL + INBOUND_CALL_PATH and purchase.form["VoiceMethod"] == "POST"
    assert first_job["status"] == second_job["status"] == call_job["status"] == bob_job["status"] == "completed"
    # Alice's texts and her call go from her number; Bob has another
    assert sent_from(twilio) == [alice_number, alice_number, bob_number] and sent_from(twilio, "Calls") == [
        alice_number
    ]
    assert bob_number not in (alice_number, twilio.from_number) and set(owned) == {alice_number, bob_number}
    assert [(r["agent_id"], r["state"], r["billed_months"]) for r in rows] == [
        (alice, "active", 1),
        (bob, "active", 1),
    ]
    assert len(twilio.number_calls("POST")) == 2  # Alice's and Bob's; none for Alice's second text or call
    # the month of the number is on the receipt of the send that bought it, not on the next ones
    assert costs == [SMS_COST + NUMBER_COST, SMS_COST, CALL_COST]
    assert left == "0.840000"  # 0.03 + 0.03 + 0.10: the number's cost is the operator's, never the agent's price

    # inbound routed by the number it came to
    assert [(m["from"], m["to"], m["body"]) for m in alices] == [
        (STRANGER, alice_number, "who is this?"),
        (DANA, alice_number, "8 works"),
    ]
    assert alices[1]["related_outbound_id"] == second_job["result"]["messages"][0]["id"]
    assert alices[0]["related_outbound_id"] is None
    assert [(m["from"], m["to"]) for m in bobs] == [(LEE, bob_number)]
    assert rang.status_code == 200 and "<Say>" in rang.text and "<Hangup/>" in rang.text
    assert forged.status_code == 403  # and not handed on (below)
    assert [(m.channel, m.sender, m.recipients) for m in got] == [
        ("sms", DANA, (alice_number,)),
        ("sms", STRANGER, (alice_number,)),
        ("sms", LEE, (bob_number,)),
        ("voice", STRANGER, (bob_number,)),
    ]


async def test_two_first_sends_at_once_buy_one_number(kernel_factory, twilio: TwilioStandIn) -> None:
    twilio.number_delay_s = 0.3  # the purchase takes a while: the other sends arrive meanwhile
    async with service(kernel_factory, twilio, workers=2) as (_kernel, client):
        _alice, alice_auth = await credits_session(client, "1")
        jobs = await asyncio.gather(
            *(accepted(client, alice_auth, SEND, {"to": [DANA], "body": f"text {n}"}) for n in range(4))
        )
        done = [await finished(client, j["request_id"], alice_auth) for j in jobs]
        costs = [await provider_cost_of(j["receipt_id"]) for j in jobs]
        rows = await PhoneNumber.select()
    assert [d["status"] for d in done] == ["completed"] * 4
    assert len(twilio.number_calls("POST")) == 1 and len(rows) == 1
    assert set(sent_from(twilio)) == {rows[0]["phone_number"]} and len(sent_from(twilio)) == 4
    assert sorted(costs) == [SMS_COST] * 3 + [SMS_COST + NUMBER_COST]  # its month on one receipt only


async def test_an_idle_number_is_warned_of_then_released_and_replaced(kernel_factory, twilio: TwilioStandIn) -> None:
    async with service(kernel_factory, twilio) as (kernel, client):
        alice, alice_auth = await credits_session(client, "1")
        _bob, bob_auth = await credits_session(client, "1")
        await text(client, alice_auth, DANA, "hello")
        await text(client, bob_auth, LEE, "hello")
        [alice_row] = await PhoneNumber.select().where(PhoneNumber.agent_id == alice)
        used = alice_row["last_used_ms"]
        number = alice_row["phone_number"]

        early = await numbers.release_idle(kernel.context, now=used + 26 * DAY_MS)
        # Bob's number is used again on day 26: only Alice's is warned of, on day 27
        [bob_row] = await PhoneNumber.select().where(PhoneNumber.agent_id != alice)
        await PhoneNumber.update({PhoneNumber.last_used_ms: used + 26 * DAY_MS}).where(PhoneNumber.id == bob_row["id"])
        warned = await numbers.release_idle(kernel.context, now=used + 27 * DAY_MS + 1)
        again = await numbers.release_idle(kernel.context, now=used + 28 * DAY_MS)
        warnings = await notifications(client, alice_auth, "phone_expiring")
        released = await numbers.release_idle(kernel.context, now=used + 30 * DAY_MS + 1)
        told = await notifications(client, alice_auth, "phone_expiring")
        after = await PhoneNumber.select().where(PhoneNumber.agent_id == alice).order_by(PhoneNumber.created_ms)
        bobs = await notifications(client, bob_auth, "phone_expiring")

        # the next send buys a new number
        job, done = await text(client, alice_auth, DANA, "still there?")
        cost = await provider_cost_of(job["receipt_id"])
        rows = await PhoneNumber.select().where(PhoneNumber.agent_id == alice).order_by(PhoneNumber.created_ms)

    assert early == numbers.IdleReport() and warned == numbers.IdleReport(warned=1) and again == numbers.IdleReport()
    [warning] = warnings
    assert warning["title"] == f"Your number {number} will be released in 3 days"
    assert warning["metadata"]["number"] == number and warning["metadata"]["stage"] == "warning"
    assert released == numbers.IdleReport(released=1)
    assert [n["metadata"]["stage"] for n in told] == ["released", "warning"]  # newest first
    assert told[0]["title"] == f"Your number {number} was released"
    assert twilio.released == [alice_row["sid"]] and number not in twilio.numbers_owned()
    [gone] = after
    assert gone["state"] == "released" and gone["holder"] is None and gone["released_ms"] == used + 30 * DAY_MS + 1
    assert bobs == []  # used within the period: kept, never warned
    assert done["status"] == "completed"
    assert [r["state"] for r in rows] == ["released", "active"] and rows[1]["phone_number"] != number
    assert sent_from(twilio)[-1] == rows[1]["phone_number"] and cost == SMS_COST + NUMBER_COST


async def test_a_send_after_the_warning_keeps_the_number(kernel_factory, twilio: TwilioStandIn) -> None:
    async with service(kernel_factory, twilio) as (kernel, client):
        _alice, alice_auth = await credits_session(client, "1")
        await text(client, alice_auth, DANA, "hello")
        [row] = await PhoneNumber.select()
        start = row["last_used_ms"]
        assert await numbers.release_idle(kernel.context, now=start + 28 * DAY_MS) == numbers.IdleReport(warned=1)
        # a text to it on day 29 is a use: the warning is withdrawn and the period starts again
        await numbers.owner_of(row["phone_number"], now=start + 29 * DAY_MS)
        kept = await numbers.release_idle(kernel.context, now=start + 31 * DAY_MS)
        [still] = await PhoneNumber.select()
    assert kept == numbers.IdleReport() and still["state"] == "active" and still["warned_ms"] is None
    assert twilio.released == []


async def test_a_later_month_of_the_number_is_on_the_next_send(kernel_factory, twilio: TwilioStandIn) -> None:
    async with service(kernel_factory, twilio) as (_kernel, client):
        _alice, alice_auth = await credits_session(client, "1")
        await text(client, alice_auth, DANA, "hello")
        # the number was bought 31 days ago: its second month is due
        await PhoneNumber.update({PhoneNumber.provisioned_ms: PhoneNumber.provisioned_ms - 31 * DAY_MS}).where(
            PhoneNumber.state == "active"
        )
        job, _ = await text(client, alice_auth, DANA, "a month later")
        later, _ = await text(client, alice_auth, DANA, "and again")
        costs = [await provider_cost_of(j["receipt_id"]) for j in (job, later)]
    assert costs == [SMS_COST + NUMBER_COST, SMS_COST]


@pytest.mark.parametrize(
    "cap", [{"TOLLWAY_SMS_NUMBERS_MAX_MONTHLY": "1"}, {"TOLLWAY_SMS_NUMBERS_BUDGET_USDC": "2"}], ids=["count", "cost"]
)
async def test_the_monthly_cap_refuses_a_new_number_before_payment(
    kernel_factory, twilio: TwilioStandIn, cap: dict[str, str]
) -> None:
    payer = Account.create()
    async with service(kernel_factory, twilio, **cap) as (kernel, client):
        await kernel.accounts.fund_chain(payer.address, 1_000_000)
        _alice, alice_auth = await credits_session(client, "1")
        _bob, bob_auth = await credits_session(client, "1")
        _, alice_job = await text(client, alice_auth, DANA, "hello")
        receipts = await count_receipts()
        by_credits = await client.post(SEND, json={"to": [LEE], "body": "hello"}, headers=bob_auth)
        bob_left = await balance(client, bob_auth)
        # by x402: the quote cannot know the payer; the signed payment is refused before it settles
        quote = await client.post(SEND, json={"to": [LEE], "body": "hello"})
        by_wallet = await client.post(
            SEND,
            json={"to": [LEE], "body": "hello"},
            headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])},
        )
        wallet = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
        receipts_after = await count_receipts()
        _, alice_again = await text(client, alice_auth, DANA, "still mine")  # a held number is still used
        rows = await PhoneNumber.select()
    assert alice_job["status"] == "completed" and alice_again["status"] == "completed"
    for refused in (by_credits, by_wallet):
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"] == "provider_unavailable"
        assert refused.json()["details"] == {"reason": "number_cap_reached"}
        assert "cap on phone numbers is reached" in refused.json()["message"]
    assert quote.status_code == 402
    assert bob_left == "1.000000" and wallet["on_chain_balance"] == "1.000000" and receipts_after == receipts
    assert len(twilio.number_calls("POST")) == 1 and len(rows) == 1
    assert len(twilio.api_calls("Messages")) == 2  # Alice's two; nothing for Bob or the wallet


async def test_the_cap_reached_after_acceptance_fails_the_send_refunded(kernel_factory, twilio: TwilioStandIn) -> None:
    async with service(kernel_factory, twilio, workers=0, TOLLWAY_SMS_NUMBERS_MAX_MONTHLY="1") as (kernel, client):
        _bob, bob_auth = await credits_session(client, "1")
        job = await accepted(client, bob_auth, SEND, {"to": [LEE], "body": "hello"})  # room for one: admitted
        await stale_claim(twilio, "agent-first", "num_0123456789abcdef00000005", 0, bought=False)  # taken meanwhile
        worker = worker_for(kernel)
        worker.start()
        try:
            done = await finished(client, job["request_id"], bob_auth)
        finally:
            await worker.stop()
        left = await balance(client, bob_auth)
        failed = await notifications(client, bob_auth, "job_failed")
    assert done["status"] == "failed" and done["error_code"] == "provider_unavailable"
    assert "cap on phone numbers is reached" in done["error"]
    assert left == "1.000000" and failed[0]["metadata"]["refunded"] is True
    assert twilio.number_calls("POST") == [] and twilio.api_calls("Messages") == []


async def test_a_number_that_cannot_be_bought_fails_the_send_uncharged(kernel_factory, twilio: TwilioStandIn) -> None:
    stock, twilio.stock = twilio.stock, []
    async with service(kernel_factory, twilio) as (_kernel, client):
        _alice, alice_auth = await credits_session(client, "1")
        _, none_left = await text(client, alice_auth, DANA, "hello")
        twilio.stock = stock
        twilio.fail_next = [(500, {"code": 20500, "message": "Internal Server Error", "status": 500}, {})]
        _, down = await text(client, alice_auth, DANA, "hello")
        left = await balance(client, alice_auth)
        rows_after_failures = await PhoneNumber.select()
        _, fine = await text(client, alice_auth, DANA, "hello again")
    assert none_left["status"] == "failed" and none_left["error_code"] == "provider_unavailable"
    assert "no local number in US" in none_left["error"]
    assert down["status"] == "failed" and down["error_code"] == "provider_unavailable"
    assert left == "1.000000" and rows_after_failures == []  # refunded; no claim left behind
    assert fine["status"] == "completed" and len(twilio.api_calls("Messages")) == 1


async def test_numbers_off_every_agent_uses_the_configured_number(kernel_factory, twilio: TwilioStandIn) -> None:
    async with service(kernel_factory, twilio, TOLLWAY_SMS_AGENT_NUMBERS="off") as (_kernel, client):
        _alice, alice_auth = await credits_session(client, "1")
        job, _ = await text(client, alice_auth, DANA, "hello")
        cost = await provider_cost_of(job["receipt_id"])
    assert sent_from(twilio) == [twilio.from_number] and twilio.number_calls("POST") == []
    assert cost == SMS_COST


async def stale_claim(twilio: TwilioStandIn, agent_id: str, claim: str, age_ms: int, *, bought: bool) -> str | None:
    """A claim a send left when its worker died (after buying its number, when `bought`): the
    number's sid at the stand-in, if any."""
    now = now_ms()
    await PhoneNumber.insert(
        PhoneNumber(
            id=claim,
            holder=f"{agent_id}|{twilio.account_sid}",
            agent_id=agent_id,
            account_sid=twilio.account_sid,
            country="US",
            phone_number=None,
            sid=None,
            state="provisioning",
            monthly_cost=NUMBER_COST,
            billed_months=0,
            last_used_ms=now - age_ms,
            warned_ms=None,
            provisioned_ms=None,
            released_ms=None,
            created_ms=now - age_ms,
            updated_ms=now - age_ms,
        )
    )
    if not bought:
        return None
    sid, number = "PN" + "a" * 24 + claim[-8:], twilio.stock.pop(0)
    twilio.owned[sid] = {"PhoneNumber": number, "FriendlyName": numbers.friendly_name(claim)}
    return sid


async def test_a_claim_left_by_a_dead_send_is_taken_over_and_its_number_kept(
    kernel_factory, twilio: TwilioStandIn
) -> None:
    async with service(kernel_factory, twilio) as (_kernel, client):
        alice, alice_auth = await credits_session(client, "1")
        sid = await stale_claim(twilio, alice, "num_deadbeefdeadbeef00000001", 10 * 60_000, bought=True)
        job, done = await text(client, alice_auth, DANA, "hello")
        cost = await provider_cost_of(job["receipt_id"])
        [row] = await PhoneNumber.select()
    assert done["status"] == "completed" and row["state"] == "active" and row["sid"] == sid
    assert sent_from(twilio) == [row["phone_number"]] == [twilio.owned[sid]["PhoneNumber"]]
    assert twilio.number_calls("POST") == []  # adopted (found by its FriendlyName), not bought again
    assert cost == SMS_COST + NUMBER_COST


async def test_abandoned_claims_are_cleared_and_their_numbers_released(kernel_factory, twilio: TwilioStandIn) -> None:
    async with service(kernel_factory, twilio) as (kernel, _client):
        sid = await stale_claim(twilio, "agent-gone", "num_deadbeefdeadbeef00000002", 2 * 3_600_000, bought=True)
        await stale_claim(twilio, "agent-gone-too", "num_deadbeefdeadbeef00000003", 2 * 3_600_000, bought=False)
        await stale_claim(twilio, "agent-busy", "num_deadbeefdeadbeef00000004", 60_000, bought=False)  # recent
        report = await numbers.release_idle(kernel.context)
        left = await PhoneNumber.select(PhoneNumber.id)
    assert report == numbers.IdleReport(abandoned=2)
    assert twilio.released == [sid] and twilio.owned == {}
    assert [r["id"] for r in left] == ["num_deadbeefdeadbeef00000004"]
