"""Fields that become mail headers (`to`, `subject`) refuse every line break Python's
str.splitlines() or header folding knows (CR, LF, VT, FF, the file/group/record separators,
NEL, U+2028, U+2029) and every other control character (NUL, DEL, C1, tab), with a 400
naming the field before payment, on the send tool and on the free quote; nothing is charged,
no receipt is signed, nothing reaches the relay (both databases, a real SMTP server)."""

from __future__ import annotations

from test_email_send import sent

from tollway.testing import credits_session, http_client, smtp_server, worker_for

SEND = "/v1/tools/email/send"
QUOTE = "/v1/tools/email/quote"
LINE_BREAKS = {
    "CR": "\r",
    "LF": "\n",
    "CRLF": "\r\n",
    "VT": "\x0b",
    "FF": "\x0c",
    "FS": "\x1c",
    "GS": "\x1d",
    "RS": "\x1e",
    "NEL": "\x85",
    "LINE SEPARATOR": "\u2028",
    "PARAGRAPH SEPARATOR": "\u2029",
}
CONTROLS = {
    "NUL": "\x00",
    "SOH": "\x01",
    "ESC": "\x1b",
    "US": "\x1f",
    "TAB": "\t",
    "DEL": "\x7f",
    "C1 PAD": "\x80",
    "C1 APC": "\x9f",
}
DRAFT = {"to": "dana@example.com", "subject": "Your invoice", "text": "Hello Dana."}


def _drafts() -> list[tuple[str, str, dict[str, str]]]:
    """(field, character's name, draft) for each header-bound field and each character."""
    out = []
    for name, char in {**LINE_BREAKS, **CONTROLS}.items():
        out.append(("subject", name, {**DRAFT, "subject": f"Your invoice{char}Bcc: eve@example.com"}))
        out.append(("subject", name, {**DRAFT, "subject": f"Your invoice{char}"}))  # at the very end too
        out.append(("to", name, {**DRAFT, "to": f"dana@example.com{char}"}))
        out.append(("to", name, {**DRAFT, "to": f"da{char}na@example.com"}))
    return out


async def test_header_fields_refuse_line_breaks_and_control_characters_before_payment(kernel_factory) -> None:
    with smtp_server() as (mail, env):
        # more calls than the `paid` category allows a minute
        kernel = await kernel_factory(installed={"tollway_email"}, env={**env, "TOLLWAY_RATE_LIMIT_PAID": "100000/60"})
        worker = worker_for(kernel)
        worker.start()
        try:
            async with http_client(kernel) as client:
                _agent, headers = await credits_session(client, "1")
                refused = []
                for field, name, draft in _drafts():
                    for path in (SEND, QUOTE):
                        answer = await client.post(path, json=draft, headers=headers)
                        refused.append((path, field, name, answer.status_code, answer.json()))
                balance = (await client.get("/v1/balance", headers=headers)).json()
                receipts = (await client.get("/v1/analytics/receipts", headers=headers)).json()
                relayed = list(mail.messages)
                # the control: a one-line subject with non-ASCII letters and punctuation is sent and charged
                fine = {**DRAFT, "subject": "Ünïcode — café № 7 «ok»"}
                quoted = await client.post(QUOTE, json=fine, headers=headers)
                _job_id, job = await sent(client, fine, headers)
                after = (await client.get("/v1/balance", headers=headers)).json()
                receipts_after = (await client.get("/v1/analytics/receipts", headers=headers)).json()
        finally:
            await worker.stop()
    wrong = [
        (path, field, name, status, body)
        for path, field, name, status, body in refused
        if status != 400
        or body.get("error") != "invalid_request"
        or [d["field"] for d in body.get("details", [])] != [field]
    ]
    assert wrong == []
    assert len(refused) == 2 * 4 * (len(LINE_BREAKS) + len(CONTROLS))
    assert balance["credits_balance"] == "1.000000" and receipts["receipts"] == [] and relayed == []
    assert quoted.status_code == 200, quoted.text
    assert job["status"] == "completed", job
    assert [m["Subject"] for m in mail.messages] == ["Ünïcode — café № 7 «ok»"]
    assert after["credits_balance"] == "0.980000" and len(receipts_after["receipts"]) == 1


async def test_the_refusal_says_which_character_and_names_every_bad_field(kernel_factory) -> None:
    with smtp_server() as (_mail, env):
        kernel = await kernel_factory(installed={"tollway_email"}, env=env)
        async with http_client(kernel) as client:
            _agent, headers = await credits_session(client, "1")
            both = {**DRAFT, "to": "dana@example.com\n", "subject": "a\u2028b"}
            refused = await client.post(SEND, json=both, headers=headers)
            quoted = await client.post(QUOTE, json=both, headers=headers)
            carriage = await client.post(QUOTE, json={**DRAFT, "subject": "a\rb"}, headers=headers)
    for answer in (refused, quoted):
        body = answer.json()
        assert answer.status_code == 400 and body["error"] == "invalid_request", answer.text
        assert [d["field"] for d in body["details"]] == ["to", "subject"]
        assert "U+000A" in body["details"][0]["message"] and "U+2028" in body["details"][1]["message"]
    assert refused.json() == quoted.json()
    assert carriage.status_code == 400 and carriage.json()["details"] == [
        {"field": "subject", "message": "must be one line without control characters (it has U+000D)"}
    ]
