"""A goal task's agent loop: the `llm` provider reads the page's accessibility snapshot (with
element refs) and answers with tool calls — `step` (one of the typed steps, run exactly as a
steps task runs it, through the same proxy) or `finish` with the answer — until it finishes,
the turns run out or the task's time does."""

from __future__ import annotations

import json
from typing import Any, Protocol

import msgspec
from playwright.async_api import Error as PlaywrightError

from . import wire
from .session import Browser, StepFailed
from .steps import step_problem

MAX_TURNS = 20
MAX_SNAPSHOT = 12_000
SYSTEM = (
    "You operate a web browser to reach the user's goal. Each turn you see the page's URL, title and "
    "accessibility snapshot, where [ref=eN] marks elements. Call `step` with one action: goto {url}; click, "
    "fill {value}, select {value}, press {key}, scroll, wait_for, extract {what: text|html|attribute|table|links}, "
    "screenshot or pdf, naming the element by role+name, label, text, or selector (`aria-ref=eN` for a ref). "
    "When the goal is reached, or cannot be, call `finish` with the answer in words."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "step",
            "description": "Run one browser step.",
            "parameters": msgspec.json.schema(wire.BrowserStep),
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "End the task with the answer.",
            "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
        },
    },
]


class Chat(Protocol):
    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]: ...


async def view(driver: Browser) -> str:
    page = driver.page
    try:
        snapshot = await page.locator("body").aria_snapshot(mode="ai", timeout=driver.timeout_ms(10))
    except PlaywrightError as exc:
        snapshot = f"(no snapshot: {str(exc).splitlines()[0][:200]})"
    return f"URL: {page.url}\nTitle: {await page.title()}\n{snapshot[:MAX_SNAPSHOT]}"


async def pursue(llm: Chat, goal: str, driver: Browser) -> None:
    """Run the loop on `driver`'s page; the answer and status go on its outcome."""
    outcome = driver.outcome
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Goal: {goal}\n\n{await view(driver)}"},
    ]
    number = 0
    for turn in range(1, MAX_TURNS + 1):
        await driver.report(f"thinking (turn {turn})")
        reply = await llm.chat(messages, TOOLS)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            outcome.answer = (reply.get("content") or "").strip() or None
            return
        for call in calls:
            name = call["function"]["name"]
            try:
                args = json.loads(call["function"].get("arguments") or "{}")
            except ValueError:
                args = {}
            if name == "finish":
                outcome.answer = str(args.get("answer") or "")
                return
            number += 1
            try:
                step = msgspec.convert(args, wire.BrowserStep)
                problem = step_problem(0, step)
                if problem is not None:
                    raise StepFailed(f"not a valid step: {problem}")
                await driver.run_step(number, step)
                said = "done"
            except msgspec.ValidationError as exc:
                said = f"not a valid step: {exc}"
            except StepFailed as failed:
                if outcome.status != "completed":  # the browser was killed for a cap
                    return
                said = f"{failed.status}: {failed.detail}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"{said}\n\n{await view(driver)}"})
    outcome.status = "goal_unfinished"
