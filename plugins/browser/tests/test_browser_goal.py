"""A goal task: the agent loop drives the browser with the `llm` provider (web's
chat_completions) answered by a scripted stand-in — a real OpenAI-compatible HTTP server on
127.0.0.1 that reads each request's accessibility snapshot and answers with the next tool
call, naming elements by the snapshot's refs."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from browser_support import one_task

GOAL = "Sign in as ada (password lovelace) and tell me the fare from the North quay to the Island."


class Script:
    """The stand-in model: each turn's answer is worked out from the conversation so far."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        seen = body["messages"][-1]["content"]
        turn = len(self.requests)
        if turn == 1:
            ref = re.search(r'link "Sign in" \[ref=([a-z0-9]+)\]', seen)
            return self._call("step", {"action": "click", "selector": f"aria-ref={ref.group(1)}"})
        if turn == 2:
            return self._call("step", {"action": "fill", "label": "Username", "value": "ada"})
        if turn == 3:
            return self._call("step", {"action": "fill", "label": "Password", "value": "lovelace"})
        if turn == 4:
            ref = re.search(r'button "Sign in" \[ref=([a-z0-9]+)\]', seen)
            return self._call("step", {"action": "click", "selector": f"aria-ref={ref.group(1)}"})
        if turn == 5:
            return self._call("step", {"action": "extract", "what": "table", "selector": "#fares", "save_as": "fares"})
        fare = re.search(r"North quay → Island.*?(\d+\.\d\d)", seen, re.S)
        return self._call("finish", {"answer": f"The fare is {fare.group(1)} USD." if fare else "not found"})

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        call = {
            "id": f"call_{len(self.requests)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


@pytest.fixture
def model() -> Iterator[tuple[Script, int]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = json.dumps(script.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield script, server.server_port
    server.shutdown()
    server.server_close()


async def test_a_goal_task_signs_in_and_answers_with_a_scripted_model(kernel_factory, site, model):
    script, port = model
    kernel = await kernel_factory(
        installed={"tollway_browser", "tollway_web"},
        env={
            "TOLLWAY_BROWSER_ALLOW_HOSTS": site.allow,
            "TOLLWAY_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "TOLLWAY_LLM_MODEL": "scripted",
        },
    )
    job = await one_task(kernel, {"start_url": f"{site.base}/fares", "goal": GOAL})
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
