"""Texts, calls and emails a case sends through the service's tools, and what answers them
(SQLite and PostgreSQL, against the Twilio stand-in, a real SMTP server and the email
plugin's inbound listener): a text replying to a case's text, the outcome of a case's call
and a reply to a case's email each wake exactly the case that sent it — not another case of
the same goal, nor a case of another goal that texted, called or emailed the same person —
and what follows nothing a case sent keeps its old way (the SMS inbox, the newest root)."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from chat_standin import call, chat_standin, turn
from goal_support import event, goals_kernel, new_goal
from test_goal_replies import reply, setup, wait_for

from tollway import storage
from tollway.testing import http_client, smtp_server, worker_for
from tollway_goals.runner import SessionRunner

TELEPHONY_TESTS = Path(__file__).resolve().parents[2] / "telephony" / "tests"
sys.path.insert(0, str(TELEPHONY_TESTS))  # the Twilio stand-in

from telephony_support import finished  # noqa: E402
from twilio_standin import TwilioStandIn, twilio_standin  # noqa: E402

PLUGINS = {"tollway_goals", "tollway_web", "tollway_telephony", "tollway_email"}
NUMBER = re.compile(r"\+1415555\d{4}")
ADDRESS = re.compile(r"[a-z]+@example\.com")
ALICE, BOB, NOBODY = "+14155550101", "+14155550102", "+14155550199"


def policy(request: dict[str, Any]) -> dict[str, Any]:
    """A case texts, calls or emails whom its task names; it answers anything else briefly."""
    messages = request["messages"]
    if "You run the goal's root" in messages[0]["content"]:
        return turn("Noted.")
    last = messages[-1]
    if last["role"] != "user" or not last["content"].startswith("[event]"):
        return turn("Noted.")
    task = last["content"]
    calls = []
    if "Text" in task:
        calls.append(call("sms_send", "s1", to=NUMBER.findall(task), body="Can you confirm Tuesday at 9?"))
    if "call" in task:
        calls.append(call("voice_call", "v1", to=NUMBER.findall(task)[0], message="Your appointment is Tuesday at 9."))
    if "Email" in task:
        calls.append(
            call("email_send", "e1", to=ADDRESS.findall(task)[0], subject="Tuesday", text="Can you confirm Tuesday?")
        )
    return turn(None, *calls)


@contextlib.asynccontextmanager
async def service(kernel_factory: Any) -> AsyncIterator[tuple[Any, TwilioStandIn, SessionRunner, Any]]:
    """(the chat stand-in, the Twilio stand-in, a session runner, an HTTP client) of a started
    service with the goals and telephony plugins and a job worker (for the agent's own texts)."""
    with chat_standin(policy) as chat, twilio_standin() as twilio:
        kernel = await goals_kernel(kernel_factory, env={**chat.env, **twilio.env()}, installed=PLUGINS)
        worker = worker_for(kernel)
        worker.start()
        try:
            async with http_client(kernel) as client:
                yield chat, twilio, SessionRunner(kernel.platform), client
        finally:
            await worker.stop()


async def told(pattern: str) -> list[tuple[str, str | None]]:
    """(goal id, case key or None for a root) of each session given a message like `pattern`."""
    rows = await storage.rows(
        "SELECT x.goal_id, c.case_key FROM goals_steps s JOIN goals_sessions x ON x.id = s.session_id "
        "LEFT JOIN goals_cases c ON c.id = x.case_id WHERE s.kind = 'message' AND s.body LIKE {}",
        pattern,
    )
    return sorted((r["goal_id"], r["case_key"]) for r in rows)


def model_saw(chat: Any, start: str) -> list[str]:
    """The messages starting with `start` the model was asked about, each once."""
    seen = [m["content"] for r in chat.requests for m in r["messages"] if m["role"] == "user"]
    return list(dict.fromkeys(c for c in seen if c.startswith(start)))


def call_to(twilio: TwilioStandIn, number: str) -> str:
    [sid] = [sid for sid, form in twilio.calls.items() if form["To"] == number]
    return sid


async def post(client: Any, hook: Any) -> None:
    resp = await client.post(hook.path, content=hook.content, headers=hook.headers)
    assert resp.status_code == 200, resp.text


async def test_a_text_reply_and_a_call_result_wake_exactly_the_case_that_sent_them(kernel_factory) -> None:
    async with service(kernel_factory) as (chat, twilio, runner, client):
        _other, other_headers, other = await new_goal(client)
        # another agent's goal texts and calls Alice first ...
        await event(client, other["goal_id"], other_headers, event_id="1", case_key="a", task=f"Text and call {ALICE}")
        await runner.run_until_idle()
        # ... then two cases of this goal text and call Alice and Bob
        _agent, headers, goal = await new_goal(client)
        await event(client, goal["goal_id"], headers, event_id="1", case_key="alice", task=f"Text and call {ALICE}")
        await event(client, goal["goal_id"], headers, event_id="2", case_key="bob", task=f"Text and call {BOB}")
        await runner.run_until_idle()
        assert len(twilio.messages) == 3 and len(twilio.calls) == 3
        sent = await storage.rows("SELECT channel, recipient FROM goals_sent ORDER BY channel, recipient")
        assert [(s["channel"], s["recipient"]) for s in sent] == [
            ("sms", ALICE),
            ("sms", ALICE),
            ("sms", BOB),
            ("voice", ALICE),
            ("voice", ALICE),
            ("voice", BOB),
        ]

        await post(client, twilio.incoming_sms(ALICE, "Yes, Tuesday works."))
        await post(client, twilio.incoming_sms(NOBODY, "Who is this?"))
        await post(client, twilio.call_status(call_to(twilio, BOB), "no-answer"))
        alice_calls = [sid for sid, form in twilio.calls.items() if form["To"] == ALICE]
        mine = await storage.row(
            "SELECT provider_id FROM goals_sent WHERE channel = 'voice' AND goal_id = {} AND recipient = {}",
            goal["goal_id"],
            ALICE,
        )
        assert mine["provider_id"] in alice_calls
        await post(client, twilio.call_status(mine["provider_id"], "completed", duration_s=12))
        await runner.run_until_idle()
        inbox = (await client.get("/v1/tools/sms/inbox", headers=headers)).json()["messages"]

    gid, oid = goal["goal_id"], other["goal_id"]
    assert await told("%Tuesday works%") == [(gid, "alice")]
    assert await told("%Who is this%") == []
    assert await told("%Result of the call you placed to " + BOB + "%") == [(gid, "bob")]
    assert await told("%Result of the call you placed to " + ALICE + "%") == [(gid, "alice")]
    assert await told("%Result of the call%") == [(gid, "alice"), (gid, "bob")]
    assert oid != gid
    # the sessions were woken and the model saw the reply and each outcome
    [text] = model_saw(chat, "[sms]")
    assert text == f"[sms] Text from {ALICE}, replying to the text you sent it (sms_send): Yes, Tuesday works."
    outcomes = sorted(model_saw(chat, "[call]"))
    assert len(outcomes) == 2
    assert outcomes[0].startswith(
        f"[call] Result of the call you placed to {ALICE}: Call to {ALICE} succeeded (completed, 12 s). Answered"
    )
    assert outcomes[1].startswith(
        f"[call] Result of the call you placed to {BOB}: Call to {BOB} did not succeed (no-answer, 0 s). Not answered"
    )
    # the SMS inbox keeps the text as before
    assert [m["body"] for m in inbox] == ["Yes, Tuesday works."]


async def test_a_status_posted_again_wakes_the_case_once(kernel_factory) -> None:
    async with service(kernel_factory) as (chat, twilio, runner, client):
        _agent, headers, goal = await new_goal(client)
        await event(client, goal["goal_id"], headers, event_id="1", case_key="alice", task=f"Text and call {ALICE}")
        await runner.run_until_idle()
        hook = twilio.call_status(call_to(twilio, ALICE), "completed", duration_s=12)
        await post(client, hook)
        await post(client, hook)
        text = twilio.incoming_sms(ALICE, "Tuesday is fine.")
        await post(client, text)
        await post(client, text)
        await runner.run_until_idle()
    assert await told("%Result of the call%") == [(goal["goal_id"], "alice")]
    assert await told("%Tuesday is fine%") == [(goal["goal_id"], "alice")]


async def test_a_text_answering_the_agents_own_later_text_wakes_no_session(kernel_factory) -> None:
    """The thread is the text last sent to that number: when the agent itself (not a goal)
    texted it after the case did, the reply answers the agent's text and goes to its inbox only."""
    async with service(kernel_factory) as (_chat, twilio, runner, client):
        _agent, headers, goal = await new_goal(client)
        await event(client, goal["goal_id"], headers, event_id="1", case_key="alice", task=f"Text {ALICE}")
        await runner.run_until_idle()
        accepted = await client.post("/v1/tools/sms/send", json={"to": [ALICE], "body": "Me again."}, headers=headers)
        assert accepted.status_code == 202, accepted.text
        await finished(client, accepted.json()["request_id"], headers)
        await post(client, twilio.incoming_sms(ALICE, "Which of you is this?"))
        await runner.run_until_idle()
        inbox = (await client.get("/v1/tools/sms/inbox", headers=headers)).json()["messages"]
    assert await told("%Which of you%") == []
    assert [m["body"] for m in inbox] == ["Which of you is this?"]


@contextlib.asynccontextmanager
async def mail_service(kernel_factory: Any) -> AsyncIterator[tuple[Any, Any, int, SessionRunner, Any]]:
    """(the chat stand-in, the SMTP server's inbox, the inbound SMTP port, a session runner, an
    HTTP client) of a started service with the goals and email plugins."""
    with chat_standin(policy) as chat, smtp_server() as (mail, mail_env):
        kernel, port = await setup(kernel_factory, chat, mail_env)
        async with http_client(kernel) as client:
            yield chat, mail, port, SessionRunner(kernel.platform), client


async def test_a_reply_to_a_cases_email_reaches_that_case_not_the_newest_root(kernel_factory) -> None:
    async with mail_service(kernel_factory) as (chat, mail, port, runner, client):
        _other, other_headers, other = await new_goal(client)
        await event(client, other["goal_id"], other_headers, event_id="1", case_key="lee", task="Email lee@example.com")
        agent_id, headers, goal = await new_goal(client)
        for key in ("lee", "kim"):  # two cases email the same person (as another agent's goal did)
            await event(client, goal["goal_id"], headers, event_id=key, case_key=key, task="Email lee@example.com")
        await runner.run_until_idle()
        assert len(mail.messages) == 3
        # the same agent's newer goal: mail that follows nothing goes to its root
        newer = (await client.post("/v1/compute", json={"goal": "A newer goal"}, headers=headers)).json()
        await runner.run_until_idle()
        mine = await storage.row(
            "SELECT s.provider_id FROM goals_sent s JOIN goals_cases c ON c.id = s.case_id "
            "WHERE s.channel = 'email' AND c.case_key = 'lee' AND s.goal_id = {}",
            goal["goal_id"],
        )
        [original] = [m for m in mail.messages if m["Message-ID"] == mine["provider_id"]]
        assert original["Reply-To"].startswith("agents+a" + agent_id.replace("-", ""))
        await reply(port, original, "Tuesday suits me.")

        async def arrived() -> bool:
            return bool(await told("%Tuesday suits me%"))

        await wait_for(arrived)
        await runner.run_until_idle()
        inbox = (await client.get("/v1/tools/inbox/list", headers=headers)).json()
    assert await told("%Tuesday suits me%") == [(goal["goal_id"], "lee")] and newer["goal_id"] != goal["goal_id"]
    [seen] = model_saw(chat, "[email]")
    assert seen == (
        "[email] Email from lee@example.com, replying to the email you sent to lee@example.com, subject "
        "'Re: Tuesday': Tuesday suits me."
    )
    assert [e["subject"] for e in inbox["emails"]] == ["Re: Tuesday"]  # the agent's inbox keeps it as before
