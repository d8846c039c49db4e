"""The multi-host test's language model stand-in: Chat Completions on TEST_MODEL_ADDRESS, scripted for goals.

The goal's root session answers "Noted."; a case session records a decision with
`record_decision`, then (once TEST_MODEL_GATE exists) waits. Started by tests/support/multihost_cli.py in a host's
namespace (`main`), so the goal sessions of every host reach it over the namespaces' network.
"""

from __future__ import annotations

import json
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PORT = 8099


def answer(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    if "You run the goal's root" in messages[0]["content"]:
        return {"role": "assistant", "content": "Noted."}
    if messages[-1]["role"] == "tool":
        _held()
        return {"role": "assistant", "content": "Recorded; waiting."}
    arguments = json.dumps({"decision": "Refund", "reason": "double charge"})
    call = {"id": "d1", "type": "function", "function": {"name": "record_decision", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _held() -> None:
    """A case's second turn notes itself in TEST_MODEL_MARKER, then waits for TEST_MODEL_GATE
    to exist (up to a minute): the test cuts a host while sessions wait here."""
    with open(os.environ["TEST_MODEL_MARKER"], "a") as fh:
        fh.write("turn\n")
    for _ in range(1200):
        if os.path.exists(os.environ["TEST_MODEL_GATE"]):
            return
        time.sleep(0.05)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        message = answer(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        data = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    ThreadingHTTPServer((os.environ["TEST_MODEL_ADDRESS"], PORT), _Handler).serve_forever()
