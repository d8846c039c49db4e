"""The `twilio` providers on their own, against the local stand-in: what they send (path,
form, Basic credentials; `Twiml` or `Url` for calls), and how Twilio's refusals map to the
service's failure codes (401 provider_auth, 429 rate_limited with retry_after, 5xx and
timeouts provider_unavailable, 400 21211/21614 invalid_input, another 400 provider_unavailable);
the auth token never shows in a failure or a repr. And the signature rule, against a
signature worked out by hand from Twilio's description."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac

import httpx
import pytest
from twilio_standin import TwilioStandIn

from tollway import Refusal, ToolError, Upstream
from tollway_telephony.twilio import SMS_TWILIO, VOICE_TWILIO, signature, signed_by


def settings(twilio: TwilioStandIn) -> dict[str, str]:
    return {
        "twilio_account_sid": twilio.account_sid,
        "twilio_auth_token": twilio.auth_token,
        "twilio_from_number": twilio.from_number,
        "twilio_api_url": twilio.url,
    }


def error(status: int, code: int, headers: dict[str, str] | None = None) -> tuple[int, dict, dict]:
    return (
        status,
        {
            "code": code,
            "message": f"error {code}",
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status,
        },
        headers or {},
    )


async def test_what_the_clients_send(twilio: TwilioStandIn) -> None:
    async with httpx.AsyncClient() as http:
        sms = SMS_TWILIO.build(settings(twilio), http)
        voice = VOICE_TWILIO.build(settings(twilio), http)
        text = await sms.send_sms(to="+14155550101", body="hi")
        by_twiml = await voice.call(
            to="+14155550101", twiml="<Response><Say>hi</Say></Response>", status_callback="https://x.test/cb"
        )
        by_url = await voice.call(to="+14155550101", url="https://x.test/twiml")
    assert text.sid.startswith("SM") and text.status == "queued"
    assert by_twiml.sid.startswith("CA") and by_url.sid.startswith("CA")
    [message, first, second] = twilio.requests
    assert message.form == {"To": "+14155550101", "From": twilio.from_number, "Body": "hi"} and message.authorized
    assert first.form == {
        "To": "+14155550101",
        "From": twilio.from_number,
        "Twiml": "<Response><Say>hi</Say></Response>",
        "StatusCallback": "https://x.test/cb",
    }
    assert second.form == {"To": "+14155550101", "From": twilio.from_number, "Url": "https://x.test/twiml"}
    assert twilio.auth_token not in repr(sms) and twilio.auth_token not in repr(voice)
    with pytest.raises(ValueError):
        await voice.call(to="+14155550101")


@pytest.mark.parametrize(
    ("answer", "code", "details"),
    [
        (error(401, 20003), "provider_auth", {"upstream_status": 401, "twilio_code": 20003}),
        (error(429, 20429, {"Retry-After": "7"}), "rate_limited", {"upstream_status": 429, "retry_after": 7}),
        (error(500, 20500), "provider_unavailable", {"upstream_status": 500, "twilio_code": 20500}),
        (error(503, 20503), "provider_unavailable", {"upstream_status": 503, "twilio_code": 20503}),
        (error(400, 21212), "provider_unavailable", {"upstream_status": 400, "twilio_code": 21212}),
        ((502, {"not": "twilio"}, {}), "provider_unavailable", {"upstream_status": 502}),
        ((201, {"no": "sid"}, {}), "provider_unavailable", {"upstream_status": 201}),
    ],
    ids=["401", "429", "500", "503", "400-other", "502-not-twilio", "201-unreadable"],
)
async def test_failures_map_to_the_service_codes(twilio: TwilioStandIn, answer, code, details) -> None:
    twilio.fail_next = [answer]
    async with httpx.AsyncClient() as http:
        client = SMS_TWILIO.build(settings(twilio), http)
        with pytest.raises(ToolError) as failed:
            await client.send_sms(to="+14155550101", body="hi")
    assert failed.value.code == code and failed.value.status == 503
    assert failed.value.details == details
    assert twilio.auth_token not in failed.value.message and twilio.account_sid not in failed.value.message


@pytest.mark.parametrize("twilio_code", [21211, 21614])
async def test_an_unreachable_number_is_an_invalid_input_refusal(twilio: TwilioStandIn, twilio_code: int) -> None:
    twilio.invalid["+14155550199"] = twilio_code
    async with httpx.AsyncClient() as http:
        with pytest.raises(Refusal) as refused:
            await VOICE_TWILIO.build(settings(twilio), http).call(to="+14155550199", twiml="<Response/>")
    assert refused.value.code == "invalid_input" and refused.value.status == 400
    assert refused.value.extra == {"twilio_code": twilio_code} and refused.value.details[0]["field"] == "to"
    assert "+14155550199" in refused.value.message


async def test_a_timeout_is_provider_unavailable(twilio: TwilioStandIn) -> None:
    twilio.delay_s = 0.5
    quick = Upstream(
        family="sms", name="twilio", label="Twilio", default_base_url=twilio.url, description="-", timeout_s=0.1
    )
    async with httpx.AsyncClient() as http:
        client = dataclasses.replace(SMS_TWILIO.build(settings(twilio), http), api=quick)
        with pytest.raises(ToolError) as failed:
            await client.send_sms(to="+14155550101", body="hi")
    assert failed.value.code == "provider_unavailable" and failed.value.details == {"reason": "timeout"}


def test_wrong_credentials_are_provider_auth(twilio: TwilioStandIn) -> None:
    import asyncio

    async def attempt() -> ToolError:
        async with httpx.AsyncClient() as http:
            client = SMS_TWILIO.build({**settings(twilio), "twilio_auth_token": "wrong"}, http)
            try:
                await client.send_sms(to="+14155550101", body="hi")
            except ToolError as exc:
                return exc
        raise AssertionError("no failure")

    failed = asyncio.run(attempt())
    assert failed.code == "provider_auth" and twilio.requests[0].authorized is False


def test_the_signature_rule() -> None:
    # Twilio's description: the URL, then each parameter sorted by name as name+value, HMAC-SHA1, base64.
    token, url = "12345", "https://mycompany.com/myapp.php?foo=1&bar=2"
    params = [
        ("To", "+18005551212"),
        ("From", "+14158675310"),
        ("CallSid", "CA1234567890ABCDE"),
        ("Caller", "+14158675310"),
        ("Digits", "1234"),
    ]
    by_hand = url + "CallSidCA1234567890ABCDECaller+14158675310Digits1234From+14158675310To+18005551212"
    expected = base64.b64encode(hmac.new(b"12345", by_hand.encode(), hashlib.sha1).digest()).decode()
    assert signature(token, url, params) == expected
    assert signed_by(token, url, params, expected)
    assert not signed_by(token, url + "&x=1", params, expected)
    assert not signed_by("54321", url, params, expected)
    assert not signed_by(token, url, params, None) and not signed_by("", url, params, expected)
