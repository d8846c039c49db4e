"""Questions to people on SQLite and PostgreSQL: an ask's email (a real SMTP server), its
reminders (at most three, each once however many workers look), its deadline (the case is
told to escalate), and an ask that cannot be sent (the session is told)."""

from __future__ import annotations

from typing import Any

from chat_standin import ask_lee, case_event, chat_standin, turn
from goal_support import event, goals_kernel, mail_kernel, new_goal

from tollway import storage
from tollway.testing import http_client, smtp_server
from tollway_goals import asks
from tollway_goals.ids import now_ms
from tollway_goals.runner import SessionRunner


def asker(request: dict[str, Any]) -> dict[str, Any]:
    if case_event(request):
        return turn(None, ask_lee(chase_after_seconds=60, deadline_seconds=300))
    return turn("Noted." if "You run the goal's root" in request["messages"][0]["content"] else "Waiting.")


async def test_reminders_and_the_deadline(kernel_factory) -> None:
    with chat_standin(asker) as chat, smtp_server() as (mail, mail_env):
        kernel = await mail_kernel(kernel_factory, chat.env, mail_env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client)
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="parcel", task="Find where the parcel goes")
            await runner.run_until_idle()
            start = now_ms()
            results = []
            for minutes in (0.5, 1.1, 1.2, 2.2, 3.3, 4.4):
                results.append(await asks.follow_up(kernel.platform, now=start + int(minutes * 60_000)))
            escalated = await asks.follow_up(kernel.platform, now=start + 301_000)
            again = await asks.follow_up(kernel.platform, now=start + 400_000)
            await runner.run_until_idle()
            record = (await client.get(f"/v1/compute/{gid}/cases/parcel", headers=headers)).json()["data"]
            steps = await storage.rows(
                "SELECT body FROM goals_steps WHERE kind = 'message' AND body LIKE {}", "%escalate%"
            )
    assert [r["chased"] for r in results] == [0, 1, 0, 1, 1, 0]
    assert escalated == {"chased": 0, "escalated": 1} and again == {"chased": 0, "escalated": 0}
    subjects = [m["Subject"] for m in mail.messages]
    assert subjects == [
        "A question for you",
        "Reminder 1: A question for you",
        "Reminder 2: A question for you",
        "Reminder 3: A question for you",
    ]
    first_id = mail.messages[0]["Message-ID"]
    assert all(m["In-Reply-To"] == first_id for m in mail.messages[1:])
    [ask] = record["asks"]
    assert (
        ask["chases"] == 3
        and ask["status"] == "expired"
        and ask["escalated_at"] is not None
        and ask["kind"] == "answer"
    )
    assert len(steps) == 1


async def test_an_ask_that_cannot_be_sent_is_told_to_the_session(kernel_factory) -> None:
    with chat_standin(asker) as chat:
        kernel = await goals_kernel(kernel_factory, env=chat.env, installed={"tollway_goals", "tollway_web"})
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client)
            await event(
                client, goal["goal_id"], headers, event_id="1", case_key="parcel", task="Find where the parcel goes"
            )
            await runner.run_until_idle()
            record = (await client.get(f"/v1/compute/{goal['goal_id']}/cases/parcel", headers=headers)).json()["data"]
    [ask] = record["asks"]
    assert ask["status"] == "undeliverable" and "email provider" in ask["answer"]["error"]
    told = [
        m
        for r in chat.requests
        for m in r["messages"]
        if m["role"] == "user" and m["content"].startswith("[ask_failed]")
    ]
    assert told and record["status"] == "waiting"
