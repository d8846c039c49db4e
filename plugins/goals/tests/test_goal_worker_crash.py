"""Fault test on PostgreSQL: a `tollway worker` process is SIGKILLed while a case session
waits on the model, holding that step's price; another worker resumes the session once the
lease runs out, gives the hold back and redoes the step. Every step is charged exactly
once, and nothing is left held."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from chat_standin import call, chat_standin, turn
from goal_support import event, goals_kernel, new_goal

from tollway import storage
from tollway.testing import http_client

STEP = 2_000
TOLLWAY = str(Path(sys.executable).parent / "tollway")


class Gate:
    """Holds the case's second model turn until opened (the first worker dies waiting)."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.second_turns = 0

    def policy(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if "You run the goal's root" in messages[0]["content"]:
            return turn("Noted.")
        if messages[-1]["role"] == "tool":
            self.second_turns += 1
            self.opened.wait(timeout=60)
            return turn("Recorded; waiting.")
        return turn(None, call("record_decision", "d1", decision="Refund", reason="double charge"))


async def start_worker(kernel: Any, env: dict[str, str]) -> asyncio.subprocess.Process:
    plugin_env = kernel.config.plugin_env
    full = {
        **os.environ,
        **env,
        "TOLLWAY_HOME": plugin_env["TOLLWAY_HOME"],
        "TOLLWAY_DATABASE_URL": kernel.db.url,
        "TOLLWAY_RECEIPT_KEY": plugin_env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
        "TOLLWAY_NETWORK": "local",
        "TOLLWAY_OFFLINE": "1",
    }
    proc = await asyncio.create_subprocess_exec(
        TOLLWAY, "worker", env=full, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    assert line.startswith(b"tollway: worker"), line
    return proc


async def wait_until(predicate: Any, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_a_killed_worker_session_resumes_and_pays_each_step_once(kernel_factory) -> None:
    gate = Gate()
    with chat_standin(gate.policy) as chat:
        env = {**chat.env, "TOLLWAY_GOALS_SESSION_LEASE_S": "1", "TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"}
        kernel = await goals_kernel(kernel_factory, env=env, installed={"tollway_goals", "tollway_web"})
        first = second = None
        try:
            async with http_client(kernel) as client:
                _agent, headers, goal = await new_goal(client)
                gid = goal["goal_id"]
                await event(client, gid, headers, event_id="1", case_key="inv-1", task="Decide the refund")
                first = await start_worker(kernel, env)

                async def dying() -> bool:
                    return gate.second_turns == 1

                await wait_until(dying)
                held = await storage.row("SELECT held FROM goals_goals WHERE id = {}", gid)
                first.send_signal(signal.SIGKILL)
                await first.wait()
                gate.opened.set()
                second = await start_worker(kernel, env)

                async def settled() -> bool:
                    case = await storage.row(
                        "SELECT s.status FROM goals_sessions s JOIN goals_cases c ON c.session_id = s.id WHERE c.case_key = 'inv-1'"
                    )
                    return case is not None and case["status"] == "waiting"

                await wait_until(settled)
                final = await storage.row("SELECT spent, held FROM goals_goals WHERE id = {}", gid)
                steps = await storage.rows(
                    "SELECT s.kind, s.cost FROM goals_steps s JOIN goals_sessions x ON x.id = s.session_id WHERE x.goal_id = {} ORDER BY s.seq",
                    gid,
                )
                record = (await client.get(f"/v1/compute/{gid}/cases/inv-1", headers=headers)).json()["data"]
        finally:
            for proc in (first, second):
                if proc is not None and proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    assert int(held["held"]) == STEP  # the dead worker held its second step
    assert gate.second_turns == 2  # the step was asked again after the crash ...
    assert int(final["spent"]) == 3 * STEP and int(final["held"]) == 0  # ... and paid once: root 1, case 2
    assert [s["kind"] for s in steps].count("llm") == 3 and "hold" not in [s["kind"] for s in steps]
    assert sum(int(s["cost"]) for s in steps) == 3 * STEP
    assert [d["decision"] for d in record["decisions"]] == ["Refund"] and record["status"] == "waiting"
