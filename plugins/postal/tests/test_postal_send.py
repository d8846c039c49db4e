"""The physical mail tool on both databases, against a local stand-in of Lob's API
(postal_lob_standin): a letter is sent (the address verified, then one letter made, with
Basic auth and Lob's own idempotency key); the Idempotency-Key is required before payment;
the same key and letter give the same job, charged and mailed once; the same key with
another letter is refused 422; all of it still holds after the service restarts on the same
database; an undeliverable address fails the job `target_unreachable`, refunded; a lost
answer from Lob and a job run again after a crash still make one letter; bad input is
refused before payment; the sender can track the letter; over MCP the key is an argument.

The tool's keys are durable (`idempotency_durable`): the kernel's record of a key outlives
TOLLWAY_IDEMPOTENCY_TTL_S and its hourly purge, so the same key gives the same job for good."""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx
import msgspec
import pytest
from mcp import Client
from postal_lob_standin import API_KEY, SENDER, LobStandIn

from tollway import ToolContext, ToolError
from tollway.testing import (
    count_quotes,
    count_receipts,
    credits_session,
    http_client,
    mcp_server_for,
    wait_for_job,
    worker_for,
)
from tollway_postal import lob as lob_module
from tollway_postal.lob import LOB_MAIL
from tollway_postal.send_tool import provider_key, run
from tollway_postal.shapes import PostalLetterInput
from tollway_postal.tables import PostalLetter

PATH = "/v1/tools/physical-mail/send"
TO = {
    "name": "Dana Smith",
    "line1": "185 Berry St",
    "line2": "Ste 6100",
    "city": "San Francisco",
    "state": "CA",
    "zip": "94107",
}
LETTER = {"to": TO, "text": "Dear Dana,\n\nYour order #42 has shipped.\n\nBest regards,\nThe shop"}
PLUGIN = {"tollway_postal"}


async def finished(client, request_id: str, headers: dict[str, str]) -> dict:
    """The job once it completed or failed (polled every 20 ms, up to 12 s)."""
    return await wait_for_job(client, request_id, headers, tries=600, every_s=0.02)


async def balance(client: httpx.AsyncClient, auth: dict[str, str]) -> str:
    return (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]


async def test_a_letter_is_verified_then_mailed_once(kernel_factory, lob: LobStandIn, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            accepted = await client.post(PATH, json=LETTER, headers={**auth, "Idempotency-Key": "order-42-letter"})
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["request_id"]
            job = await finished(client, job_id, auth)
            left = await balance(client, auth)
    finally:
        await worker.stop()
    assert accepted.json()["status"] == "queued"
    assert job["status"] == "completed", job
    assert [(r.method, r.path) for r in lob.requests] == [("POST", "/v1/us_verifications"), ("POST", "/v1/letters")]
    assert all(r.authorized for r in lob.requests)  # Basic auth, the key as user name
    verify, letter = lob.requests
    assert verify.fields == {
        "recipient": "Dana Smith",
        "primary_line": "185 Berry St",
        "secondary_line": "Ste 6100",
        "city": "San Francisco",
        "state": "CA",
        "zip_code": "94107",
    }
    [(letter_id, made)] = lob.letters.items()
    assert letter.headers["idempotency-key"] == provider_key(job_id)
    assert letter.fields["to"] == {
        "name": "Dana Smith",
        "address_line1": "185 Berry St",
        "address_line2": "Ste 6100",
        "address_city": "San Francisco",
        "address_state": "CA",
        "address_zip": "94107",
        "address_country": "US",
    }
    assert letter.fields["from"] == {
        "name": "Tollway Mailroom",
        "address_line1": "1 Market St",
        "address_line2": "Ste 300",
        "address_city": "San Francisco",
        "address_state": "CA",
        "address_zip": "94105",
        "address_country": "US",
    }
    assert letter.fields["color"] == "false" and letter.fields["use_type"] == "operational"
    assert letter.fields["metadata"] == {"tollway_request_id": job_id}
    assert "Your order #42 has shipped." in letter.fields["file"] and letter.fields["file"].startswith(
        "<!DOCTYPE html>"
    )
    assert job["result"] == {
        "letter_id": letter_id,
        "expected_delivery_date": made["expected_delivery_date"],
        "color": False,
        "address": {
            "deliverability": "deliverable",
            "primary_line": "185 BERRY ST",
            "secondary_line": "STE 6100",
            "last_line": "SAN FRANCISCO CA 94107-1741",
        },
    }
    assert left == "8.500000"  # 1.50 USDC, black and white
    assert API_KEY not in caplog.text and letter.headers["authorization"].split(" ")[1] not in caplog.text


async def test_the_idempotency_key_is_required_before_payment(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    async with http_client(kernel) as client:
        _agent, auth = await credits_session(client, "10")
        refused = await client.post(PATH, json=LETTER, headers=auth)
        left = await balance(client, auth)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "invalid_request"
    assert refused.json()["details"] == [{"field": "Idempotency-Key", "message": "required"}]
    assert "PAYMENT-REQUIRED" not in refused.headers
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0
    assert left == "10.000000" and lob.requests == []


async def test_the_same_key_and_letter_is_one_job_charged_and_mailed_once(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            headers = {**auth, "Idempotency-Key": "order-43-letter"}
            first = await client.post(PATH, json=LETTER, headers=headers)
            at_once = await client.post(PATH, json=LETTER, headers=headers)  # a retry before the job ran
            job = await finished(client, first.json()["request_id"], auth)
            later = await client.post(
                PATH, json=dict(reversed(list(LETTER.items()))), headers=headers
            )  # same body, other key order
            left = await balance(client, auth)
    finally:
        await worker.stop()
    assert first.status_code == at_once.status_code == later.status_code == 202
    assert first.json() == at_once.json() == later.json()  # the same job, the same receipt
    assert job["status"] == "completed"
    assert left == "8.500000"  # charged once
    assert len(lob.seen("POST", "/v1/letters")) == 1 and len(lob.letters) == 1  # mailed once
    assert len(lob.seen("POST", "/v1/us_verifications")) == 1


async def test_the_same_key_with_another_letter_is_refused(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    async with http_client(kernel) as client:
        _agent, auth = await credits_session(client, "10")
        headers = {**auth, "Idempotency-Key": "order-44-letter"}
        first = await client.post(PATH, json=LETTER, headers=headers)
        other = await client.post(PATH, json={**LETTER, "text": "Dear Dana, a different letter."}, headers=headers)
        colour = await client.post(PATH, json={**LETTER, "color": True}, headers=headers)
        left = await balance(client, auth)
    assert first.status_code == 202
    assert other.status_code == colour.status_code == 422
    assert other.json()["error"] == colour.json()["error"] == "idempotency_key_reused"
    assert left == "8.500000"


async def test_the_key_survives_a_restart_on_the_same_database(kernel_factory, lob: LobStandIn) -> None:
    first_kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(first_kernel)
    worker.start()
    try:
        async with http_client(first_kernel) as client:
            _agent, auth = await credits_session(client, "10")
            headers = {**auth, "Idempotency-Key": "order-45-letter"}
            first = await client.post(PATH, json=LETTER, headers=headers)
            job = await finished(client, first.json()["request_id"], auth)
    finally:
        await worker.stop()
    await first_kernel.stop()

    second_kernel = await kernel_factory(installed=PLUGIN, env=lob.env())  # a new service, the same database
    assert second_kernel is not first_kernel
    async with http_client(second_kernel) as client:
        seen_again = (await client.get(f"/v1/requests/{first.json()['request_id']}", headers=auth)).json()
        rows = await PostalLetter.raw("SELECT request_id, state, letter_id FROM postal_letters").run()
        again = await client.post(PATH, json=LETTER, headers=headers)
        other = await client.post(PATH, json={**LETTER, "text": "Another letter."}, headers=headers)
        left = await balance(client, auth)
    # the second kernel reads what the first wrote: it is the same database
    assert seen_again["status"] == "completed" and seen_again["result"] == job["result"]
    assert rows == [
        {"request_id": first.json()["request_id"], "state": "sent", "letter_id": job["result"]["letter_id"]}
    ]
    assert again.status_code == 202 and again.json() == first.json()  # the same job
    assert other.status_code == 422 and other.json()["error"] == "idempotency_key_reused"
    assert left == "8.500000" and len(lob.letters) == 1


async def test_the_key_outlives_the_kernels_own_record(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            headers = {**auth, "Idempotency-Key": "order-46-letter"}
            first = await client.post(PATH, json=LETTER, headers=headers)
            await finished(client, first.json()["request_id"], auth)
            # a year later, past any TOLLWAY_IDEMPOTENCY_TTL_S: the purge keeps a durable key's record
            year = 365 * 86_400_000
            kept = await PostalLetter.raw("SELECT expires_ms - created_ms AS life FROM tw_idempotency").run()
            assert all(int(r["life"]) > 50 * year for r in kept)
            await PostalLetter.raw(
                "DELETE FROM tw_idempotency WHERE expires_ms <= {}", int(time.time() * 1000) + year
            ).run()
            again = await client.post(PATH, json=LETTER, headers=headers)
            other = await client.post(PATH, json={**LETTER, "text": "Another letter."}, headers=headers)
            if again.status_code == 202 and again.json()["request_id"] != first.json()["request_id"]:
                await finished(client, again.json()["request_id"], auth)
            left = await balance(client, auth)
    finally:
        await worker.stop()
    assert again.status_code == 202 and again.json()["request_id"] == first.json()["request_id"]
    assert other.status_code == 422 and other.json()["error"] == "idempotency_key_reused"
    assert left == "8.500000" and len(lob.letters) == 1


async def test_an_undeliverable_address_fails_the_job_refunded(kernel_factory, lob: LobStandIn) -> None:
    lob.deliverability["1 NOWHERE LN"] = "undeliverable"
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            accepted = await client.post(
                PATH,
                json={**LETTER, "to": {**TO, "line1": "1 Nowhere Ln"}, "color": True},
                headers={**auth, "Idempotency-Key": "order-47-letter"},
            )
            job = await finished(client, accepted.json()["request_id"], auth)
            receipt = (await client.get(f"/v1/receipts/{accepted.json()['receipt_id']}", headers=auth)).json()
            left = await balance(client, auth)
    finally:
        await worker.stop()
    assert job["status"] == "failed"
    assert (job["error_code"], job["error_category"]) == ("target_unreachable", "bad_request")
    assert "undeliverable" in job["error"]
    assert left == "10.000000"  # the 2.50 USDC refunded
    assert receipt["status"] == "refunded", receipt
    assert len(lob.seen("POST", "/v1/us_verifications")) == 1 and lob.seen("POST", "/v1/letters") == []


async def test_a_lost_answer_is_asked_again_with_the_same_provider_key(
    kernel_factory, lob: LobStandIn, monkeypatch
) -> None:
    monkeypatch.setattr(lob_module, "RETRY_DELAYS_S", (0.01, 0.01))
    lob.lose_letter_answers = 1  # Lob makes the letter, then the answer is a 500
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            accepted = await client.post(PATH, json=LETTER, headers={**auth, "Idempotency-Key": "order-48-letter"})
            job = await finished(client, accepted.json()["request_id"], auth)
    finally:
        await worker.stop()
    asked = lob.seen("POST", "/v1/letters")
    assert job["status"] == "completed"
    assert len(asked) == 2 and asked[0].headers["idempotency-key"] == asked[1].headers["idempotency-key"]
    assert list(lob.letters) == [job["result"]["letter_id"]]  # one letter


async def test_a_job_run_again_after_a_crash_mails_one_letter(kernel_factory, lob: LobStandIn, monkeypatch) -> None:
    """The job's run as a worker runs it, then again as another worker would after the first
    crashed: first after Lob made the letter but before its answer arrived, then after the
    letter was recorded."""
    monkeypatch.setattr(lob_module, "RETRY_DELAYS_S", (0.01, 0.01))
    await kernel_factory(installed=PLUGIN, env=lob.env())  # the service's database, with postal_letters
    settings = {k.removeprefix("TOLLWAY_MAIL_").lower(): v for k, v in lob.env().items()}

    class OneProvider:
        def __init__(self, client: Any) -> None:
            self.mail = client

        def client(self, kind: str, http: httpx.AsyncClient) -> tuple[Any, int]:
            return self.mail, 0

    value = msgspec.convert(LETTER, PostalLetterInput)
    async with httpx.AsyncClient() as http:
        ctx = ToolContext(
            request_id="req_0123456789abcdef",
            agent_id="agent-crash",
            http=http,
            settings={},
            providers=OneProvider(LOB_MAIL.build(settings, http)),
        )
        lob.lose_letter_answers = 3  # every answer lost: the first run ends without knowing
        with pytest.raises(ToolError) as lost:
            await run(value, ctx)
        made = list(lob.letters)
        again = await run(value, ctx)
        asked = len(lob.requests)
        third = await run(value, ctx)
    assert lost.value.code == "provider_unavailable"
    assert len(made) == 1 and again.letter_id == made[0] and list(lob.letters) == made
    assert len(lob.seen("POST", "/v1/us_verifications")) == 1  # the verification is kept, not bought again
    assert {r.headers["idempotency-key"] for r in lob.seen("POST", "/v1/letters")} == {
        provider_key("req_0123456789abcdef")
    }
    assert third == again and len(lob.requests) == asked  # answered from postal_letters, Lob not asked


async def test_a_long_letter_is_uploaded_as_a_file(kernel_factory, lob: LobStandIn) -> None:
    text = "\n".join(f"{i:03d} " + "All work and no play makes a long letter. " + "x" * 30 for i in range(150))
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            accepted = await client.post(
                PATH, json={"to": TO, "text": text}, headers={**auth, "Idempotency-Key": "order-49-letter"}
            )
            assert accepted.status_code == 202, accepted.text
            job = await finished(client, accepted.json()["request_id"], auth)
    finally:
        await worker.stop()
    [asked] = lob.seen("POST", "/v1/letters")
    assert job["status"] == "completed", job
    assert asked.content_type.startswith("multipart/form-data") and "file" not in asked.fields
    name, content_type, content = asked.files["file"]
    assert (name, content_type) == ("letter.html", "text/html") and len(content) >= 10_000
    assert "149 All work" in content.decode() and asked.fields["to"]["address_zip"] == "94107"


async def test_bad_letters_are_refused_before_payment(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    bad = {
        "both": ({**LETTER, "html": "<p>Hi</p>"}, {"text"}),
        "neither": ({"to": TO}, {"html"}),
        "too_long_text": ({"to": TO, "text": "line\n" * 400}, {"text"}),
        "too_long_html": ({"to": TO, "html": "<p>" + "paragraph</p><p>" * 400}, {"html"}),
        "over_100_kb": ({"to": TO, "html": "<p>" + "é" * 60_000 + "</p>"}, {"html"}),
        "not_html": ({"to": TO, "html": "just words"}, {"html"}),
        "blank_name": ({**LETTER, "to": {**TO, "name": "  "}}, {"to.name"}),
        "address": (
            {**LETTER, "to": {**TO, "state": "California", "zip": "9410", "country": "CA"}},
            {"to.state", "to.zip", "to.country"},
        ),
    }
    async with http_client(kernel) as client:
        _agent, auth = await credits_session(client, "10")
        answers = {
            name: await client.post(PATH, json=body, headers={**auth, "Idempotency-Key": f"bad-{name}"})
            for name, (body, _f) in bad.items()
        }
        left = await balance(client, auth)
    for name, (_body, fields) in bad.items():
        answer = answers[name]
        assert answer.status_code == 400, (name, answer.text)
        assert {d["field"] for d in answer.json()["details"]} == fields, (name, answer.json())
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0
    assert left == "10.000000" and lob.requests == []


async def test_the_sender_tracks_the_letter(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            _other, stranger = await credits_session(client, "1")
            accepted = await client.post(PATH, json=LETTER, headers={**auth, "Idempotency-Key": "order-50-letter"})
            request_id = accepted.json()["request_id"]
            job = await finished(client, request_id, auth)
            lob.track(job["result"]["letter_id"], "In Transit")
            tracked = await client.get(f"/v1/tools/physical-mail/letters/{request_id}", headers=auth)
            theirs = await client.get(f"/v1/tools/physical-mail/letters/{request_id}", headers=stranger)
            unknown = await client.get("/v1/tools/physical-mail/letters/req_ffffffffffffffff", headers=auth)
    finally:
        await worker.stop()
    assert tracked.status_code == 200, tracked.text
    body = tracked.json()
    assert (
        body["letter_id"] == job["result"]["letter_id"]
        and body["expected_delivery_date"] == job["result"]["expected_delivery_date"]
    )
    assert [e["name"] for e in body["tracking_events"]] == ["In Transit"] and body["status"] == "processed"
    assert theirs.status_code == unknown.status_code == 404
    assert lob.seen("GET", f"/v1/letters/{job['result']['letter_id']}")[0].authorized


async def test_a_refused_api_key_fails_the_job_refunded(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env={**lob.env(), "TOLLWAY_MAIL_LOB_API_KEY": "test_not_the_key"})
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            accepted = await client.post(PATH, json=LETTER, headers={**auth, "Idempotency-Key": "order-51-letter"})
            job = await finished(client, accepted.json()["request_id"], auth)
            left = await balance(client, auth)
    finally:
        await worker.stop()
    assert job["status"] == "failed" and job["error_code"] == "provider_auth"
    assert left == "10.000000"
    assert [r.authorized for r in lob.requests] == [False] and lob.letters == {}
    assert "test_not_the_key" not in job["error"]


def test_the_sender_settings_are_the_providers() -> None:
    assert {s.env_var for s in LOB_MAIL.requires} == {
        "TOLLWAY_MAIL_LOB_API_KEY",
        *(k for k in SENDER if k != "TOLLWAY_MAIL_FROM_LINE2"),
    }
    assert [s.env_var for s in LOB_MAIL.settings if s.secret] == ["TOLLWAY_MAIL_LOB_API_KEY"]


async def test_over_mcp_the_idempotency_key_is_an_argument(kernel_factory, lob: LobStandIn) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=lob.env())
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            _agent, auth = await credits_session(client, "10")
            async with Client(mcp_server_for(kernel, token=auth["Authorization"].split()[1])) as mcp:
                first = await mcp.call_tool(
                    "physical_mail_send", {**LETTER, "idempotency_key": "mcp-letter-1", "wait_seconds": 20}
                )
                again = await mcp.call_tool(
                    "physical_mail_send", {**LETTER, "idempotency_key": "mcp-letter-1", "wait_seconds": 20}
                )
                other = await mcp.call_tool(
                    "physical_mail_send", {**LETTER, "text": "Another.", "idempotency_key": "mcp-letter-1"}
                )
            left = await balance(client, auth)
    finally:
        await worker.stop()
    job = first.structured_content["job"]
    assert job["status"] == "completed" and job["result"]["letter_id"] in lob.letters
    assert again.structured_content["request_id"] == first.structured_content["request_id"]
    assert other.is_error and other.structured_content["error"] == "idempotency_key_reused"
    assert left == "8.500000" and len(lob.letters) == 1
