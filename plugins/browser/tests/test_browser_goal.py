"""A goal task: the agent loop drives the browser with the `llm` provider (web's
chat_completions) answered by a scripted stand-in (`tollway.testing.scripted_model`, a real
Chat Completions server on 127.0.0.1) that reads each request's accessibility snapshot and answers with the next tool
call, naming elements by the snapshot's refs. And a stand-in that never finishes: the
loop's turns run out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import balance, run_task

from tollway.testing import ScriptedModel, credits_session, http_client, scripted_model, tool_call
from tollway_browser import agent

GOAL = "Sign in as ada (password lovelace) and tell me the fare from the North quay to the Island."


def sign_in_and_read(body: dict[str, Any]) -> dict[str, Any]:
    """The stand-in model: each turn's answer is worked out from the conversation so far."""
    seen = body["messages"][-1]["content"]
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant") + 1
    if turn == 1:
        ref = re.search(r'link "Sign in" \[ref=([a-z0-9]+)\]', seen)
        return tool_call("step", {"action": "click", "selector": f"aria-ref={ref.group(1)}"}, f"call_{turn}")
    if turn == 2:
        return tool_call("step", {"action": "fill", "label": "Username", "value": "ada"}, f"call_{turn}")
    if turn == 3:
        return tool_call("step", {"action": "fill", "label": "Password", "value": "lovelace"}, f"call_{turn}")
    if turn == 4:
        ref = re.search(r'button "Sign in" \[ref=([a-z0-9]+)\]', seen)
        return tool_call("step", {"action": "click", "selector": f"aria-ref={ref.group(1)}"}, f"call_{turn}")
    if turn == 5:
        step = {"action": "extract", "what": "table", "selector": "#fares", "save_as": "fares"}
        return tool_call("step", step, f"call_{turn}")
    fare = re.search(r"North quay → Island.*?(\d+\.\d\d)", seen, re.S)
    return tool_call("finish", {"answer": f"The fare is {fare.group(1)} USD." if fare else "not found"}, f"call_{turn}")


def scroll_forever(body: dict[str, Any]) -> dict[str, Any]:
    """A stand-in that scrolls every turn and never calls `finish`."""
    return tool_call("step", {"action": "scroll", "dy": 100}, f"call_{len(body['messages'])}")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model(sign_in_and_read) as stand_in:
        yield stand_in


@pytest.fixture
def endless() -> Iterator[ScriptedModel]:
    with scripted_model(scroll_forever) as stand_in:
        yield stand_in


async def goal_task(kernel_factory, site, port: int, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A goal task of a new agent with a dollar of credits: its finished job and the balance left."""
    kernel = await kernel_factory(
        installed={"tollway_browser", "tollway_web"},
        env={
            "TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow,
            "TOLLWAY_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "TOLLWAY_LLM_MODEL": "scripted",
        },
    )
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        job = await run_task(kernel, client, auth, body)
        return job, await balance(client, auth)


async def test_a_goal_task_signs_in_and_answers_with_a_scripted_model(kernel_factory, site, model):
    script, port = model, model.port
    job, _ = await goal_task(kernel_factory, site, port, {"start_url": f"{site.base}/fares", "goal": GOAL})
    assert job["status"] == "completed", job
    result = job["result"]
    assert result["status"] == "completed" and result["answer"] == "The fare is 4.50 USD."
    assert result["title"] == "Your account"
    assert [s["action"] for s in result["steps"]] == ["start", "click", "fill", "fill", "click", "extract"]
    assert all(s["status"] == "ok" for s in result["steps"]), result["steps"]
    assert result["extracts"][0]["rows"][1] == ["North quay → Island", "4.50", "Daily, 07:40"]
    first = script.requests[0]
    assert first["model"] == "scripted" and {t["function"]["name"] for t in first["tools"]} == {"step", "finish"}
    assert GOAL in first["messages"][1]["content"] and "Harbour fares" in first["messages"][1]["content"]
    assert len(script.requests) == 6
    assert site.forbidden.hits == []


async def test_a_goal_task_whose_model_never_finishes_ends_goal_unfinished_and_is_charged(
    kernel_factory, site, endless
):
    script, port = endless, endless.port
    body = {"start_url": f"{site.base}/fares", "goal": "Scroll until you find the moon.", "time_limit_s": 120}
    job, left = await goal_task(kernel_factory, site, port, body)
    assert job["status"] == "completed", job
    result = job["result"]
    assert result["status"] == "goal_unfinished" and result["answer"] is None
    assert len(script.requests) == agent.MAX_TURNS == 20
    assert [s["action"] for s in result["steps"]] == ["start"] + ["scroll"] * 20
    assert all(s["status"] == "ok" for s in result["steps"]), result["steps"]
    assert left == "0.920000"  # the start page opened: the task did work, charged 0.08
    assert site.forbidden.hits == []
