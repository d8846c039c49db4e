"""Replies by email on SQLite and PostgreSQL, through the email plugin's inbound SMTP
listener: a reply reaches the session that asked (and no other goal) and is written on
the ask with who, when, `via: reply` and the message; a reply saying "approved" to an
approval releases nothing; mail that follows nothing goes to the agent's newest goal."""

from __future__ import annotations

import asyncio
from email.message import EmailMessage
from typing import Any

import aiosmtplib
from chat_standin import ask_lee, call, chat_standin, turn
from goal_support import event, goals_kernel, new_goal

from tollway import storage
from tollway.testing import http_client, reserve_socket, smtp_server
from tollway_goals.runner import SessionRunner

SHOWN = {"refund_usdc": "40.00"}


def policy(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    if "You run the goal's root" in messages[0]["content"]:
        return turn("Noted.")
    last = messages[-1]
    if last["role"] == "user" and last["content"].startswith("[event]"):
        kind = "approval" if "approve" in last["content"] else "answer"
        extra = {"shown": SHOWN} if kind == "approval" else {}
        return turn(
            None,
            ask_lee("Well?", kind=kind, **extra),
        )
    if last["role"] == "user" and last["content"].startswith("[reply]") and "approval ask" in last["content"]:
        return turn(None, call("deliver_result", "d1", result=SHOWN))
    return turn("Waiting.")


async def reply(port: int, original: EmailMessage, text: str, *, to: str | None = None, thread: bool = True) -> None:
    msg = EmailMessage()
    msg["From"] = "Lee <lee@example.com>"
    msg["To"] = to or str(original["Reply-To"])
    msg["Subject"] = "Re: " + str(original["Subject"])
    msg["Message-ID"] = f"<reply-{id(msg):x}@example.com>"
    if thread:
        msg["In-Reply-To"] = original["Message-ID"]
        msg["References"] = original["Message-ID"]
    msg.set_content(text)
    await aiosmtplib.send(msg, hostname="127.0.0.1", port=port)


async def setup(kernel_factory, chat, mail_env, hooks_url: str | None = None):
    probe = reserve_socket()
    port = probe.getsockname()[1]
    probe.close()
    env = {**chat.env, **mail_env, "TOLLWAY_EMAIL_INBOUND_PORT": str(port)}
    kernel = await goals_kernel(kernel_factory, env=env, installed={"tollway_goals", "tollway_web", "tollway_email"})
    for _ in range(200):  # the listener starts with the service
        try:
            await aiosmtplib.SMTP(hostname="127.0.0.1", port=port).connect()
            break
        except OSError:
            await asyncio.sleep(0.01)
    return kernel, port


async def wait_for(predicate, rounds: int = 200) -> None:
    for _ in range(rounds):
        if await predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("not reached")


async def test_a_reply_reaches_the_session_that_asked_and_no_other_goal(kernel_factory) -> None:
    with chat_standin(policy) as chat, smtp_server() as (mail, mail_env):
        kernel, port = await setup(kernel_factory, chat, mail_env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal_a = await new_goal(client)
            await event(client, goal_a["goal_id"], headers, event_id="1", case_key="q", task="Ask Lee")
            _other, other_headers, goal_b = await new_goal(client)
            await event(client, goal_b["goal_id"], other_headers, event_id="1", case_key="q", task="Ask Lee")
            await runner.run_until_idle()
            first = next(
                m
                for m in mail.messages
                if goal_a["goal_id"] and m["Reply-To"].startswith("agents+a" + _agent.replace("-", ""))
            )
            await reply(port, first, "Send it to 12 Elm Street.")

            async def answered() -> bool:
                return (await storage.row("SELECT COUNT(*) AS n FROM goals_asks WHERE status = 'answered'"))["n"] == 1

            await wait_for(answered)
            await runner.run_until_idle()
            record_a = (await client.get(f"/v1/compute/{goal_a['goal_id']}/cases/q", headers=headers)).json()["data"]
            record_b = (await client.get(f"/v1/compute/{goal_b['goal_id']}/cases/q", headers=other_headers)).json()[
                "data"
            ]
    [ask_a], [ask_b] = record_a["asks"], record_b["asks"]
    assert (
        ask_a["status"] == "answered"
        and ask_a["answer"]["via"] == "reply"
        and ask_a["answer"]["who"] == "lee@example.com"
    )
    assert ask_a["answer"]["message"]["text"] == "Send it to 12 Elm Street." and ask_a["answer"]["when"]
    assert ask_b["status"] == "sent" and ask_b["answer"] is None
    replies = [
        m["content"]
        for r in chat.requests
        for m in r["messages"]
        if m["role"] == "user" and m["content"].startswith("[reply]")
    ]
    assert replies and all("12 Elm Street" in r for r in replies)
    sessions_told = {
        r["messages"][0]["content"]
        for r in chat.requests
        if any(m["content"] and "12 Elm" in str(m["content"]) for m in r["messages"])
    }
    assert len(sessions_told) == 1


async def test_a_reply_saying_approved_releases_nothing(kernel_factory) -> None:
    with chat_standin(policy) as chat, smtp_server() as (mail, mail_env):
        kernel, port = await setup(kernel_factory, chat, mail_env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, params={"result_webhook_url": "http://127.0.0.1:9/hooks"})
            await event(
                client, goal["goal_id"], headers, event_id="1", case_key="r", task="Get Lee to approve the refund"
            )
            await runner.run_until_idle()
            await reply(port, mail.messages[0], "Approved! Yes, approved.")

            async def told() -> bool:
                return bool(
                    await storage.row(
                        "SELECT id FROM goals_steps WHERE kind = 'message' AND body LIKE {}", "%approves nothing%"
                    )
                )

            await wait_for(told)
            await runner.run_until_idle()
            record = (await client.get(f"/v1/compute/{goal['goal_id']}/cases/r", headers=headers)).json()["data"]
    [ask] = record["asks"]
    assert ask["status"] == "sent" and ask["answer"] is None
    assert [(d["status"], "has not been given" in (d["last_error"] or "")) for d in record["deliveries"]] == [
        ("withheld", True)
    ]


async def test_mail_that_follows_nothing_goes_to_the_agents_newest_goal(kernel_factory) -> None:
    with chat_standin(policy) as chat, smtp_server() as (mail, mail_env):
        kernel, port = await setup(kernel_factory, chat, mail_env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            agent_id, headers, older = await new_goal(client)
            newer = (await client.post("/v1/compute", json={"goal": "The newer goal"}, headers=headers)).json()
            await runner.run_until_idle()
            address = f"agents+a{agent_id.replace('-', '')}@tollway.test"
            fresh = EmailMessage()
            fresh["Subject"], fresh["Message-ID"], fresh["Reply-To"] = "hello", "<x@example.com>", address
            await reply(port, fresh, "A new matter for you.", to=address, thread=False)
            await reply(port, fresh, "Nobody's mail.", to="someone@tollway.test", thread=False)

            async def arrived() -> bool:
                return bool(
                    await storage.row(
                        "SELECT id FROM goals_steps WHERE kind = 'message' AND body LIKE {}", "%A new matter%"
                    )
                )

            await wait_for(arrived)
            where = await storage.rows(
                "SELECT x.goal_id FROM goals_steps s JOIN goals_sessions x ON x.id = s.session_id WHERE s.body LIKE {}",
                "%A new matter%",
            )
            stray = await storage.rows("SELECT id FROM goals_steps WHERE body LIKE {}", "%Nobody's mail%")
    assert [w["goal_id"] for w in where] == [newer["goal_id"]] and newer["goal_id"] != older["goal_id"]
    assert stray == []
