"""`sms_send` against the local Twilio stand-in (both databases): a text to three numbers is
three API calls with Twilio's form fields; status callbacks signed as Twilio signs them move
each message forward (never back) and, once all are final, write exactly one `sms_completed`;
a forged callback is refused 403 and changes nothing; eleven recipients are refused before
payment; a number Twilio refuses (21211) fails the job and refunds it, or only its own
message when others went out."""

from __future__ import annotations

import base64
import logging
from urllib.parse import parse_qs, urlsplit

from telephony_support import PLUGIN, balance, finished, notifications, post, service
from twilio_standin import PUBLIC_URL, TwilioStandIn

from tollway.testing import count_quotes, credits_session, http_client

SEND = "/v1/tools/sms/send"
NUMBERS = ["+14155550101", "+14155550102", "+14155550103"]


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name} {record.getMessage()}")


async def test_a_text_to_three_numbers_and_its_delivery(kernel_factory, twilio: TwilioStandIn) -> None:
    # every log record, at DEBUG, from after the app set up its logging (it replaces the root's handlers)
    kept, root = Kept(), logging.getLogger()
    async with service(kernel_factory, twilio) as client:
        level = root.level
        root.addHandler(kept)
        root.setLevel(logging.DEBUG)
        agent_id, headers = await credits_session(client, "1")
        accepted = await client.post(
            SEND, json={"to": NUMBERS, "body": "Table for 4 at 7 pm & <b>see you</b>"}, headers=headers
        )
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["status"] == "queued" and accepted.json()["tool"] == "sms_send"
        request_id = accepted.json()["request_id"]
        job = await finished(client, request_id, headers)
        assert job["status"] == "completed", job

        # three API calls, each with Twilio's form fields and the account's Basic credentials
        made = twilio.api_calls("Messages")
        assert [r.form["To"] for r in made] == NUMBERS
        for r in made:
            assert r.authorized and r.path == f"/2010-04-01/Accounts/{twilio.account_sid}/Messages.json"
            assert set(r.form) == {"To", "From", "Body", "StatusCallback"}
            assert r.form["From"] == twilio.from_number and r.form["Body"] == "Table for 4 at 7 pm & <b>see you</b>"
            callback = urlsplit(r.form["StatusCallback"])
            assert f"{callback.scheme}://{callback.netloc}{callback.path}" == f"{PUBLIC_URL}/v1/telephony/twilio/status"
            assert parse_qs(callback.query)["ref"][0].startswith("sms_")
        messages = job["result"]["messages"]
        assert [m["to"] for m in messages] == NUMBERS and all(m["status"] == "queued" for m in messages)
        assert [m["sid"] for m in messages] == list(twilio.messages) and all(
            m["sid"].startswith("SM") for m in messages
        )
        sids = [m["sid"] for m in messages]

        # sent, then delivered for two of them: nothing is final for the whole batch yet
        for sid in sids:
            answered = await post(client, twilio.message_status(sid, "sent"))
            assert answered.status_code == 200 and "<Response/>" in answered.text
        for sid in sids[:2]:
            assert (await post(client, twilio.message_status(sid, "delivered"))).status_code == 200
        assert await notifications(client, headers, "sms_completed") == []

        # forged: signed with another token, a tampered body, no signature at all; each 403, nothing changes
        forged = twilio.message_status(sids[2], "delivered", token="0" * 32)
        tampered = twilio.message_status(sids[2], "sent")
        unsigned = twilio.message_status(sids[2], "delivered")
        refused = [
            await post(client, forged),
            await post(client, tampered, content=tampered.content.replace(b"sent", b"delivered")),
            await post(
                client, unsigned, headers={k: v for k, v in unsigned.headers.items() if k != "x-twilio-signature"}
            ),
        ]
        assert [r.status_code for r in refused] == [403, 403, 403]
        live = (await client.get(f"/v1/requests/{request_id}", headers=headers)).json()["result"]["messages"]
        assert [m["status"] for m in live] == ["delivered", "delivered", "sent"]
        assert await notifications(client, headers, "sms_completed") == []

        # the last one is final: one notification; a late callback moves nothing back and adds nothing
        assert (
            await post(client, twilio.message_status(sids[2], "undelivered", error_code="30003"))
        ).status_code == 200
        assert (await post(client, twilio.message_status(sids[0], "sent"))).status_code == 200
        assert (
            await post(client, twilio.message_status(sids[2], "undelivered", error_code="30003"))
        ).status_code == 200
        done = await notifications(client, headers, "sms_completed")
        job = (await client.get(f"/v1/requests/{request_id}", headers=headers)).json()
        spent = await balance(client, headers)
        root.removeHandler(kept)
        root.setLevel(level)

    assert len(done) == 1
    note = done[0]
    assert note["title"] == "SMS to 3 numbers: 2 delivered, 1 undelivered"
    assert note["metadata"]["jobId"] == request_id and note["metadata"]["counts"] == {"delivered": 2, "undelivered": 1}
    assert [(m["to"], m["status"]) for m in note["metadata"]["messages"]] == list(
        zip(NUMBERS, ["delivered", "delivered", "undelivered"])
    )
    assert [m["status"] for m in job["result"]["messages"]] == ["delivered", "delivered", "undelivered"]
    assert job["result"]["messages"][2]["error_code"] == "30003"
    assert spent == "0.970000"  # 0.03 for the call, whatever the number of recipients
    assert agent_id
    assert any("twilio status" in line for line in kept.lines)
    assert not [line for line in kept.lines if twilio.auth_token in line]  # the auth token is never logged


async def test_eleven_recipients_are_refused_before_payment(kernel_factory, twilio: TwilioStandIn) -> None:
    eleven = [f"+1415555{n:04d}" for n in range(11)]
    kernel = await kernel_factory(installed={PLUGIN}, env=twilio.env())  # no worker: nothing gets that far
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client, "1")
        refused = await client.post(SEND, json={"to": eleven, "body": "hi"}, headers=headers)
        twice = await client.post(SEND, json={"to": [NUMBERS[0], NUMBERS[0]], "body": "hi"}, headers=headers)
        bad = await client.post(SEND, json={"to": ["4155550101"], "body": "", "colour": "red"}, headers=headers)
        left = await balance(client, headers)
        quotes = await count_quotes(kernel)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_request" and [d["field"] for d in refused.json()["details"]] == ["to"]
    assert (
        twice.status_code == 400
        and twice.json()["details"][0]["field"] == "to"
        and "more than once" in twice.json()["message"]
    )
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} == {"to[0]", "body", "colour"}
    assert left == "1.000000" and quotes == 0
    assert twilio.requests == []  # Twilio was never asked


async def test_a_number_twilio_refuses_fails_the_job_and_refunds_it(kernel_factory, twilio: TwilioStandIn) -> None:
    twilio.invalid["+14155550199"] = 21211
    twilio.invalid["+14155550198"] = 21614
    async with service(kernel_factory, twilio) as client:
        _agent, headers = await credits_session(client, "1")
        alone = (await client.post(SEND, json={"to": ["+14155550199"], "body": "hello"}, headers=headers)).json()
        failed = await finished(client, alone["request_id"], headers)
        after_refund = await balance(client, headers)
        mixed = (
            await client.post(SEND, json={"to": [NUMBERS[0], "+14155550198"], "body": "hello"}, headers=headers)
        ).json()
        partial = await finished(client, mixed["request_id"], headers)
        after_partial = await balance(client, headers)
        told = await notifications(client, headers, "job_failed")
    assert failed["status"] == "failed" and failed["error_code"] == "invalid_input", failed
    assert "+14155550199" in failed["error"] and "21211" in failed["error"]
    assert after_refund == "1.000000"  # charged at acceptance, refunded when the job failed
    assert told[0]["metadata"]["refunded"] is True
    # one number refused among others: the job completes, only that message failed
    assert partial["status"] == "completed"
    [sent, refused] = partial["result"]["messages"]
    assert sent["status"] == "queued" and sent["sid"].startswith("SM")
    assert refused == {
        "id": refused["id"],
        "to": "+14155550198",
        "sid": None,
        "status": "failed",
        "error_code": "21614",
        "error_message": refused["error_message"],
    }
    assert after_partial == "0.970000"
    assert len(twilio.api_calls("Messages")) == 3


async def test_twilio_down_fails_the_job_and_refunds_it(kernel_factory, twilio: TwilioStandIn) -> None:
    twilio.fail_next = [(503, {"code": 20500, "message": "Internal Server Error", "more_info": "", "status": 503}, {})]
    async with service(kernel_factory, twilio) as client:
        _agent, headers = await credits_session(client, "1")
        job = (await client.post(SEND, json={"to": NUMBERS, "body": "hello"}, headers=headers)).json()
        failed = await finished(client, job["request_id"], headers)
        left = await balance(client, headers)
    assert failed["status"] == "failed" and failed["error_code"] == "provider_unavailable", failed
    assert left == "1.000000"
    assert len(twilio.api_calls("Messages")) == 1  # the batch stopped at the first failure


def test_the_standin_checks_basic_auth(twilio: TwilioStandIn) -> None:
    import httpx

    wrong = "Basic " + base64.b64encode(f"{twilio.account_sid}:nope".encode()).decode()
    answer = httpx.post(
        f"{twilio.url}/2010-04-01/Accounts/{twilio.account_sid}/Messages.json",
        data={"To": NUMBERS[0]},
        headers={"Authorization": wrong},
    )
    assert (
        answer.status_code == 401
        and answer.json()["code"] == 20003
        and set(answer.json()) == {"code", "message", "more_info", "status"}
    )
