"""The PostgreSQL event bus: channels subscribed back to back after start all
receive their notifications (their LISTENs share one connection)."""

from __future__ import annotations

import asyncio

import pytest


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_channels_subscribed_together_all_hear_their_events(kernel_factory):
    kernel = await kernel_factory()
    bus = kernel.events
    heard: dict[str, list[str]] = {"tw_test_a": [], "tw_test_b": [], "tw_test_c": []}
    for channel, got in heard.items():
        bus.subscribe(channel, got.append)  # as a worker and the push hub do at start
    await asyncio.sleep(0.3)
    for channel in heard:
        await bus.publish(channel, f"hello {channel}")
    for _ in range(100):
        if all(heard.values()):
            break
        await asyncio.sleep(0.05)
    assert heard == {c: [f"hello {c}"] for c in heard}
