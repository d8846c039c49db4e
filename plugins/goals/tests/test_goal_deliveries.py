"""A case's result delivery on SQLite and PostgreSQL, against a receiver that fails once:
the single-case read lists every attempt of each delivery (when, the HTTP status, the
error), not only how many there were."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chat_standin import call, chat_standin, last_role, turn
from goal_support import event, goals_kernel, new_goal

from tollway.testing import http_client
from tollway_goals.runner import SessionRunner


@contextlib.contextmanager
def failing_once() -> Iterator[dict[str, Any]]:
    """A receiver answering 500 to its first POST and 204 to the others."""
    seen: dict[str, Any] = {"posts": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen["posts"] += 1
            self.send_response(500 if seen["posts"] == 1 else 204)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    seen["url"] = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def delivering(request: dict[str, Any]) -> dict[str, Any]:
    if "You run the goal's root" in request["messages"][0]["content"] or last_role(request) == "tool":
        return turn("Done.")
    return turn(None, call("deliver_result", "d1", result={"invoice": "inv-1", "paid": True}))


async def test_every_attempt_of_a_delivery_shows_on_the_case(kernel_factory) -> None:
    with chat_standin(delivering) as chat, failing_once() as hook:
        env = {**chat.env, "TOLLWAY_WEBHOOK_RETRY_BASE_S": "0.05"}
        kernel = await goals_kernel(kernel_factory, env=env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, params={"result_webhook_url": hook["url"]})
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="inv-1", task="Check invoice 1")
            await runner.run_until_idle()
            await kernel.webhooks.run_due()
            await asyncio.sleep(0.2)
            await kernel.webhooks.run_due()
            record = (await client.get(f"/v1/compute/{gid}/cases/inv-1", headers=headers)).json()["data"]
    [delivery] = record["deliveries"]
    assert delivery["status"] == "delivered" and hook["posts"] == 2
    first, second = delivery["attempts"]
    assert (first["attempt"], first["status_code"], second["attempt"], second["status_code"]) == (1, 500, 2, 204)
    assert first["error"] and second["error"] is None
    assert first["at"] <= second["at"] and first["at"].endswith("Z")
    assert delivery["last_error"] is None and delivery["next_attempt_at"] is None
