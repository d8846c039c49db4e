"""Waiting for a job by two channels at once: the WebSocket `/v1/requests/subscribe` and polling
`GET /v1/requests/{id}`, whichever sees the job end first. Polling is the source of truth: when
the socket is refused or cut, polling alone finishes the wait."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import connect

from ._errors import TollwayError, WaitTimeout

TERMINAL = ("completed", "failed")
# Polling backoff: 300 ms, 600 ms, 1 s, 2 s, then 5 s while the push channel is proven (it
# delivered its snapshot and is still open); 2 s when it is not, since polling is then alone.
POLL_DELAYS_S = (0.3, 0.6, 1.0, 2.0)
RELAXED_S = 5.0
ALONE_S = 2.0


def poll_delay(attempt: int, push_alive: bool) -> float:
    if attempt < len(POLL_DELAYS_S):
        return POLL_DELAYS_S[attempt]
    return RELAXED_S if push_alive else ALONE_S


class _Push:
    alive = False


async def _by_websocket(url: str, headers: dict[str, str], request_id: str, push: _Push) -> dict[str, Any] | None:
    """The terminal Job resource as the socket sends it; None when the socket ends first."""
    try:
        async with connect(url, additional_headers=headers, open_timeout=10, max_size=2**24) as ws:
            async for raw in ws:
                message = json.loads(raw)
                if message.get("request_id") != request_id:
                    continue
                if message.get("type") == "error":
                    return None
                if message.get("type") == "job":
                    push.alive = True
                    if message.get("status") in TERMINAL:
                        return {k: v for k, v in message.items() if k not in ("type", "snapshot")}
    except Exception:  # refused, cut or garbled: polling carries on alone
        pass
    finally:
        push.alive = False
    return None


async def _by_polling(get_job: Callable[[], Awaitable[dict[str, Any]]], push: _Push) -> dict[str, Any]:
    attempt = 0
    while True:
        await asyncio.sleep(poll_delay(attempt, push.alive))
        attempt += 1
        try:
            job = await get_job()
        except TollwayError as exc:  # unreachable, 5xx or 429: ask again; any other refusal ends the wait
            if exc.status is not None and exc.status < 500 and exc.status != 429:
                raise
            continue
        if job.get("status") in TERMINAL:
            return job


async def wait_two_channels(
    *,
    request_id: str,
    websocket_url: str,
    websocket_headers: dict[str, str],
    get_job: Callable[[], Awaitable[dict[str, Any]]],
    timeout_s: float,
) -> tuple[dict[str, Any], str]:
    """(the finished Job resource, "websocket" or "polling"); WaitTimeout after `timeout_s`."""
    push = _Push()
    socket = asyncio.ensure_future(_by_websocket(websocket_url, websocket_headers, request_id, push))
    polling = asyncio.ensure_future(_by_polling(get_job, push))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    pending = {socket, polling}
    try:
        while pending:
            done, pending = await asyncio.wait(
                pending, timeout=max(0.0, deadline - loop.time()), return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                break
            if polling in done:
                return polling.result(), "polling"
            if socket in done and socket.result() is not None:
                return socket.result(), "websocket"
        raise WaitTimeout(
            "wait_timeout",
            f"job {request_id} did not finish within {timeout_s:g} s; it may still: wait again",
            body={"request_id": request_id},
        )
    finally:
        for task in (socket, polling):
            task.cancel()
        for task in (socket, polling):
            with contextlib.suppress(BaseException):
                await task
