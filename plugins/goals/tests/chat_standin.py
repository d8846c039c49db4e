"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 for the goals tests:
`policy(request_json) -> assistant message` decides each turn; every request is kept."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Policy = Callable[[dict[str, Any]], dict[str, Any]]


class ChatStandin:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.requests: list[dict[str, Any]] = []
        self.base = ""

    @property
    def env(self) -> dict[str, str]:
        return {"TOLLWAY_LLM_BASE_URL": self.base, "TOLLWAY_LLM_MODEL": "scripted"}


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def turn(content: str | None = None, *calls: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def ask_lee(question: str = "Which address should the parcel go to?", **options: Any) -> dict[str, Any]:
    """The `ask_person` call (id a1) of a case asking Lee by email; `options` add to it."""
    return call(
        "ask_person",
        "a1",
        person_name="Lee",
        person_address="lee@example.com",
        question=question,
        **{"kind": "answer", **options},
    )


def case_event(request: dict[str, Any]) -> bool:
    """Whether the model is asked by a case's session about an event (not by the root)."""
    messages = request["messages"]
    last = messages[-1]
    return (
        "You run the goal's root" not in messages[0]["content"]
        and last["role"] == "user"
        and last["content"].startswith("[event]")
    )


def last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request["messages"]):
        if message["role"] == "user":
            return message["content"]
    return ""


def last_role(request: dict[str, Any]) -> str:
    return request["messages"][-1]["role"]


@contextlib.contextmanager
def chat_standin(policy: Policy) -> Iterator[ChatStandin]:
    standin = ChatStandin(policy)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            standin.requests.append(body)
            try:
                message = standin.policy(body)
                status, answer = (
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 1,
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                            }
                        ],
                    },
                )
            except Exception as exc:  # a policy bug shows as a 500 the loop records
                status, answer = 500, {"error": {"message": str(exc)}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    standin.base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
