"""What the telephony tests share: a started service with the plugin and a worker, jobs
waited for, webhooks posted, notifications read, inbound messages caught."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from twilio_standin import TwilioStandIn, Webhook

import tollway
from tollway.testing import http_client, wait_for_job, worker_for

PLUGIN = "tollway_telephony"


@contextlib.asynccontextmanager
async def service(kernel_factory: Any, twilio: TwilioStandIn, **extra: Any) -> AsyncIterator[Any]:
    """An HTTP client over a started service with the plugin (configured for the stand-in)
    and a running job worker."""
    kernel = await kernel_factory(installed={PLUGIN}, env=twilio.env(), **extra)
    worker = worker_for(kernel)
    worker.start()
    try:
        async with http_client(kernel) as client:
            yield client
    finally:
        await worker.stop()


async def finished(client, request_id: str, headers: dict[str, str]) -> dict:
    """The job once it completed or failed (polled every 20 ms, up to 10 s)."""
    return await wait_for_job(client, request_id, headers, tries=500, every_s=0.02)


async def post(client: Any, hook: Webhook, **changes: Any) -> Any:
    """Post a webhook as Twilio would (`headers=` replaces its headers, `content=` its body)."""
    return await client.post(
        hook.path, content=changes.get("content", hook.content), headers=changes.get("headers", hook.headers)
    )


async def notifications(client: Any, headers: dict[str, str], type_: str) -> list[dict[str, Any]]:
    listed = (await client.get("/v1/tools/notifications?limit=100", headers=headers)).json()
    return [n for n in listed["notifications"] if n["type"] == type_]


async def balance(client: Any, headers: dict[str, str]) -> str:
    return (await client.get("/v1/balance", headers=headers)).json()["credits_balance"]


class Catcher:
    """A plugin whose inbound handler keeps every message the service hands it."""

    def __init__(self) -> None:
        self.got: list[tollway.InboundMessage] = []

    @tollway.hookimpl
    def register_inbound_handlers(self, register: Any) -> None:
        async def take(message: tollway.InboundMessage, platform: Any) -> bool:
            self.got.append(message)
            return True

        register(take)
