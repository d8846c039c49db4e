"""A compute goal end to end, on SQLite and PostgreSQL, with real peers: a scripted
OpenAI-compatible model, a real SMTP server, headless Chromium and a webhook receiver.
Events open three cases; one asks a person to approve its result; the email reaches the
SMTP server; Chromium opens the link, sees exactly the result and clicks; the result
webhook is delivered, its signature verified, its body equal to what was approved. A result
sent before the approval is withheld; a second click, an expired and an altered link are
refused. Screenshots of the pages are kept in test-artifacts/goals/."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

from browser import Browser, missing_chromium
from chat_standin import call, chat_standin, turn
from goal_support import event, goals_kernel, new_goal
from mail_and_hooks import hook_receiver

from tollway import storage
from tollway.testing import http_client, reserve_socket, serve_http, smtp_server
from tollway_goals.approval_links import make_token
from tollway_goals.approval_pages import pretty_shown
from tollway_goals.runner import SessionRunner
from tollway_goals.secrets_store import key

RESULT = {"invoice": "inv-2", "refund_usdc": "120.00", "reason": "double charge"}
OTHER = {"invoice": "inv-2", "refund_usdc": "1200.00", "reason": "double charge"}
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "goals"


def called(request: dict[str, Any]) -> list[str]:
    return [
        c["function"]["name"]
        for m in request["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or ()
    ]


def story(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    if "You run the goal's root" in messages[0]["content"]:
        return turn("Noted.")
    task = next(m["content"] for m in messages if m["role"] == "user")
    done = called(request)
    n = len(messages)
    if "refund" not in task:
        return (
            turn(None, call("update_case", f"u{n}", state="paid", owner="Ana"))
            if "update_case" not in done
            else turn("Paid.")
        )
    if "ask_person" not in done:
        return turn(
            None,
            call(
                "ask_person",
                f"a{n}",
                person_name="Dana Reyes",
                person_address="dana@example.com",
                kind="approval",
                question="May we refund invoice inv-2?",
                shown=RESULT,
            ),
        )
    if done.count("deliver_result") == 0:
        return turn(None, call("deliver_result", f"d{n}", result=OTHER))  # too early, and not what will be approved
    approved = any(m["role"] == "user" and m["content"].startswith("[approval]") for m in messages)
    if approved and done.count("deliver_result") == 1:
        return turn(None, call("deliver_result", f"d{n}", result=RESULT))
    return turn("Waiting for the approval." if not approved else "Delivered.")


def browse(link: str, base: str, expired: str, altered: str, shots: Path) -> dict[str, Any]:
    """What a person's browser sees (run in a thread: the service answers from the test's loop)."""
    seen: dict[str, Any] = {}
    with Browser() as browser:
        seen["expired"] = (browser.navigate(expired), browser.attribute_of("#reason", "data-reason"))
        browser.screenshot(shots / "refused-expired.png")
        seen["altered"] = (browser.navigate(altered), browser.attribute_of("#reason", "data-reason"))
        browser.screenshot(shots / "refused-altered.png")
        seen["open"] = browser.navigate(link)
        seen["shown"] = browser.text_of("#shown")
        browser.screenshot(shots / "approval.png")
        seen["click"] = browser.click("#approve")
        seen["approved"] = browser.text_of("#approved")
        browser.screenshot(shots / "approved.png")
        seen["again"] = (browser.navigate(link), browser.attribute_of("#reason", "data-reason"))
        browser.screenshot(shots / "refused-used.png")
    return seen


async def test_a_goal_with_an_approval_end_to_end(kernel_factory, db_kind) -> None:
    assert missing_chromium() is None, missing_chromium()
    shots = ARTIFACTS / db_kind
    shots.mkdir(parents=True, exist_ok=True)
    sock = reserve_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with chat_standin(story) as chat, smtp_server() as (mail, mail_env), hook_receiver() as hooks:
        env = {**chat.env, **mail_env, "TOLLWAY_GOALS_PUBLIC_URL": base, "TOLLWAY_WEBHOOK_RETRY_BASE_S": "1"}
        kernel = await goals_kernel(
            kernel_factory, env=env, installed={"tollway_goals", "tollway_web", "tollway_email"}
        )
        runner = SessionRunner(kernel.platform)
        async with serve_http(kernel, sock), http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, params={"budget_usdc": "5", "result_webhook_url": hooks.url})
            gid = goal["goal_id"]
            for i in (1, 2, 3):
                task = "Decide the refund for invoice 2" if i == 2 else f"Check invoice {i} is paid"
                assert (await event(client, gid, headers, event_id=f"e{i}", case_key=f"inv-{i}", task=task)).json()[
                    "outcome"
                ] == "created"
            await runner.run_until_idle()
            assert len(mail.messages) == 1
            message = mail.messages[0]
            text = message.get_content()
            link = re.search(r"http://\S+/v1/approvals/\S+", text).group(0)
            assert message["To"] == "dana@example.com" and link.startswith(base) and "does not approve" in text
            ask = await storage.row("SELECT * FROM goals_asks WHERE kind = 'approval'")
            expired = (
                f"{base}/v1/approvals/{make_token(await key(), ask['id'], ask['shown_hash'], int(time.time()) - 60)}"
            )
            token = link.rsplit("/", 1)[1]
            mac = token.rsplit(".", 1)[1]
            altered = f"{base}/v1/approvals/{token[: -len(mac)]}{'A' if mac[0] != 'A' else 'B'}{mac[1:]}"
            before = (await client.get(f"/v1/compute/{gid}/cases/inv-2", headers=headers)).json()["data"]
            seen = await asyncio.to_thread(browse, link, base, expired, altered, shots)
            await runner.run_until_idle()
            await kernel.webhooks.run_due()
            record = (await client.get(f"/v1/compute/{gid}/cases/inv-2", headers=headers)).json()["data"]
            listing = (await client.get(f"/v1/compute/{gid}/cases", headers=headers)).json()
            secret = (await client.get(f"/v1/compute/{gid}/result-webhook", headers=headers)).json()["data"]["secret"]
    # the withheld early result, and the one delivery sent
    assert [d["status"] for d in before["deliveries"]] == ["withheld"] and "has not been given" in before["deliveries"][
        0
    ]["last_error"]
    assert seen["expired"] == (410, "expired") and seen["altered"] == (403, "altered")
    assert seen["open"] == 200 and seen["shown"] == pretty_shown(RESULT)
    assert seen["click"] == 200 and "Dana Reyes" in seen["approved"]
    assert seen["again"] == (410, "used")
    assert len(hooks.received) == 1
    hook_headers, raw = hooks.received[0]
    assert kernel.platform.verify_webhook(secret, raw, hook_headers["x-service-signature"])
    body = json.loads(raw)
    assert (
        body["event"] == "case.result" and body["goal_id"] == gid and body["case"] == "inv-2" and body["attempt"] == 1
    )
    assert (
        body["result"] == RESULT and body["approval"]["via"] == "link" and body["approval"]["who"] == "dana@example.com"
    )
    assert body["approval"]["ask_id"] == ask["id"] and hook_headers["webhook-id"] == body["delivery_id"]
    [approval] = record["asks"]
    assert (
        approval["status"] == "approved"
        and approval["answer"]["via"] == "link"
        and approval["answer"]["shown"] == RESULT
    )
    assert approval["answer"]["shown_hash"] == ask["shown_hash"]
    assert [(d["status"], len(d["attempts"])) for d in record["deliveries"]] == [("withheld", 0), ("delivered", 1)]
    assert listing["counts"] == {"paid": 2, "open": 1}
    for name in ("approval", "approved", "refused-used", "refused-expired", "refused-altered"):
        assert (shots / f"{name}.png").stat().st_size > 1000
