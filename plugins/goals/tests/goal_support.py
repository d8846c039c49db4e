"""Helpers of the goals tests: a started kernel with the goals plugin, and a goal paid
from credits over HTTP."""

from __future__ import annotations

from typing import Any

from tollway.testing import credits_session

PLUGINS = {"tollway_goals", "tollway_web"}  # the web plugin brings the llm provider a goal needs
# a model configured (a goal is refused without one); tests that run sessions give their stand-in's address
ENV = {
    "TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1",
    "TOLLWAY_LLM_BASE_URL": "http://127.0.0.1:9/v1",
    "TOLLWAY_LLM_MODEL": "none",
}


async def goals_kernel(
    kernel_factory: Any, env: dict[str, str] | None = None, installed: set[str] | None = None
) -> Any:
    return await kernel_factory(installed=installed or PLUGINS, env={**ENV, **(env or {})})


async def mail_kernel(kernel_factory: Any, model_env: dict[str, str], mail_env: dict[str, str]) -> Any:
    """A kernel with goals whose model is a stand-in and whose asks are emailed (the email
    plugin, to a test SMTP server)."""
    return await goals_kernel(
        kernel_factory, env={**model_env, **mail_env}, installed={"tollway_goals", "tollway_web", "tollway_email"}
    )


async def new_goal(
    client: Any, *, credits: str = "50", params: dict[str, Any] | None = None, goal: str = "Keep every invoice paid."
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(agent_id, auth headers, the 202 body) of a goal paid from credits."""
    agent_id, headers = await credits_session(client, credits)
    body: dict[str, Any] = {"goal": goal}
    if params is not None:
        body["params"] = params
    resp = await client.post("/v1/compute", json=body, headers=headers)
    assert resp.status_code == 202, resp.text
    return agent_id, headers, resp.json()


async def event(client: Any, goal_id: str, headers: dict[str, str], **body: Any) -> Any:
    return await client.post(f"/v1/compute/{goal_id}/events", json=body, headers=headers)
