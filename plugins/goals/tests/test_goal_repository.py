"""A goal's session reads a repository file through its creator's connection (GitHub
stand-in, both databases): the model gets the file, the one-repository token appears in no
tool result, no stored step and no log line; another repository of the same installation
outside the connection's scope, and a revoked connection, are refused to the model."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from chat_standin import call, chat_standin, turn
from github_standin import github_standin, rsa_keypair
from goal_support import event, goals_kernel, new_goal
from test_connections import APP_ID, INSTALLATION, INSTALLER, callback, create, github_env, state_of

from tollway import storage
from tollway.testing import http_client
from tollway_goals.runner import SessionRunner


def reader(connection: dict[str, str]):
    def policy(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if "You run the goal's root" in messages[0]["content"]:
            return turn("Noted.")
        if messages[-1]["role"] == "tool":
            return turn("Read.")
        return turn(
            None,
            call(
                "read_repository_file",
                "r1",
                connection_id=connection["id"],
                repository="acme/api",
                path="docs/README.md",
            ),
            call("read_repository_file", "r2", connection_id=connection["id"], repository="acme/secret", path="x"),
        )

    return policy


@pytest.fixture(scope="module")
def keys() -> tuple[str, str]:
    return rsa_keypair()


async def test_a_session_reads_a_file_and_never_sees_the_token(kernel_factory, keys, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    connection: dict[str, str] = {}
    with github_standin(APP_ID, keys[1]) as github, chat_standin(reader(connection)) as chat:
        github.install(INSTALLATION, "acme", ["api", "secret"], members=[INSTALLER])
        github.put_file("acme/api", "docs/README.md", "# The API\nIt answers.\n")
        env = {**chat.env, **github_env(github, keys[0])}
        kernel = await goals_kernel(kernel_factory, env=env, installed={"tollway_goals", "tollway_web"})
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client)
            created = await create(client, headers)
            assert (await callback(client, github, state_of(created["link"]))).status_code == 200
            await storage.rows(
                "UPDATE goals_connections SET repositories = {} WHERE id = {}", json.dumps(["acme/api"]), created["id"]
            )
            connection["id"] = created["id"]
            await event(client, goal["goal_id"], headers, event_id="1", case_key="docs", task="Read the API docs")
            await runner.run_until_idle()
            steps = await storage.rows("SELECT body FROM goals_steps")
    results = [json.loads(m["content"]) for r in chat.requests for m in r["messages"] if m["role"] == "tool"]
    read, refused = results[0], results[1]
    assert read["ok"] and read["content"] == "# The API\nIt answers.\n"
    assert "error" in refused and "acme/secret" in refused["error"]
    tokens = list(github.issued)
    assert tokens
    stored = " ".join(s["body"] for s in steps)
    sent = json.dumps(chat.requests)
    logged = " ".join(r.getMessage() for r in caplog.records)
    for token in tokens:
        assert token not in stored and token not in sent and token not in logged
    assert not any(github.token_is_live(t) for t in tokens)  # given up once the file was read
