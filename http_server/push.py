"""The job push channel: WebSocket `/v1/requests/subscribe` (docs/jobs.md).

Each API process subscribes once to the job-update events (LISTEN/NOTIFY on
PostgreSQL, in-process on SQLite) and forwards them to its sockets that asked
for those request ids. Messages are read from the job row, so a push always
matches what polling would return.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import WebSocket, websocket
from litestar.exceptions import WebSocketDisconnect

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.events import JOB_UPDATES
from tollway._core.basics.json_depth import json_too_deep, too_deep_error
from tollway._core.basics.request import CallRequest
from tollway._core.jobs.jobs import TERMINAL
from tollway._core.wire import JobStatus

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

# Unfinished jobs one connection watches at once; a finished job leaves the count
# with its terminal message, so a client may wait on any number of jobs in turn.
MAX_WATCHED_PER_SOCKET = 100


class PushHub:
    """Routes job-update events of this process to the queues of interested sockets."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._queues: dict[str, set[asyncio.Queue[str]]] = defaultdict(set)
        self._unsubscribe: Any = None

    def start(self) -> None:
        if self._unsubscribe is None:
            self._unsubscribe = self.kernel.events.subscribe(JOB_UPDATES, self._on_event)

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_event(self, payload: str) -> None:
        request_id = payload.split(" ", 1)[0]
        for queue in list(self._queues.get(request_id, ())):
            queue.put_nowait(request_id)

    def watch(self, request_id: str, queue: asyncio.Queue[str]) -> None:
        self._queues[request_id].add(queue)

    def unwatch(self, request_id: str, queue: asyncio.Queue[str]) -> None:
        watchers = self._queues.get(request_id)
        if watchers is not None:
            watchers.discard(queue)
            if not watchers:
                self._queues.pop(request_id, None)


def _message(job: JobStatus, snapshot: bool) -> dict[str, Any]:
    return {"type": "job", "snapshot": snapshot, **msgspec.to_builtins(job)}


def make_subscribe_handler(kernel: Kernel, hub: PushHub) -> Any:
    @websocket("/v1/requests/subscribe")
    async def subscribe(socket: WebSocket) -> None:
        hub.start()  # idempotent; also covers apps run without a lifespan (tests)
        await socket.accept()
        req = CallRequest(
            method="GET",
            path=socket.url.path,
            url=str(socket.url),
            headers={k.lower(): v for k, v in socket.headers.items()},
            query={k: v for k, v in socket.query_params.items()},
        )
        try:
            caller = await kernel.reads.reader(req)
        except ServiceError as exc:
            await socket.send_json({"type": "error", **exc.body()})
            await socket.close(code=4401)
            return
        queue: asyncio.Queue[str] = asyncio.Queue()
        watching: set[str] = set()  # request ids subscribed and not yet finished
        sent: dict[str, tuple[str, str | None]] = {}  # request id -> last (status, message) pushed, while watched
        order = asyncio.Lock()  # one push at a time: messages leave in the order their rows were read

        def drop(request_id: str) -> None:
            watching.discard(request_id)
            sent.pop(request_id, None)
            hub.unwatch(request_id, queue)

        async def push(request_id: str, snapshot: bool) -> None:
            async with order:
                if request_id not in watching:  # finished or unsubscribed meanwhile
                    return
                try:
                    job = await kernel.reads.job_for(caller, request_id)
                except ServiceError as exc:
                    drop(request_id)
                    await socket.send_json({"type": "error", "request_id": request_id, **exc.body()})
                    return
                seen = (job.status, job.message)  # a new status, or a running job's new progress message
                if sent.get(request_id) != seen or snapshot:
                    sent[request_id] = seen
                    await socket.send_json(_message(job, snapshot))
                if job.status in TERMINAL:
                    drop(request_id)

        async def over_cap(request_id: str) -> None:
            """At the cap: a finished (or unknown) job still answers at once; an unfinished one is refused."""
            try:
                job = await kernel.reads.job_for(caller, request_id)
            except ServiceError as exc:
                await socket.send_json({"type": "error", "request_id": request_id, **exc.body()})
                return
            if job.status in TERMINAL:
                await socket.send_json(_message(job, True))
                return
            await socket.send_json(
                {
                    "type": "error",
                    "request_id": request_id,
                    "error": "invalid_request",
                    "limit": MAX_WATCHED_PER_SOCKET,
                    "message": f"This connection already watches {MAX_WATCHED_PER_SOCKET} unfinished jobs, the most it may; "
                    "subscribe to this one again when one of them has finished.",
                }
            )

        async def add(ids: Any) -> None:
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                await socket.send_json(
                    {"type": "error", "error": "invalid_request", "message": "request_ids must be a list of strings"}
                )
                return
            for request_id in ids:
                if request_id not in watching and len(watching) >= MAX_WATCHED_PER_SOCKET:
                    await over_cap(request_id)
                    continue
                watching.add(request_id)
                hub.watch(request_id, queue)  # watch first: no update can slip between snapshot and watch
                await push(request_id, snapshot=True)

        async def read_client() -> None:
            while True:
                text = await socket.receive_data(mode="text")
                if json_too_deep(text):
                    error = too_deep_error()
                    await socket.send_json({"type": "error", **error.body()})
                    continue
                try:
                    message = msgspec.json.decode(text)
                except msgspec.DecodeError:
                    await socket.send_json(
                        {"type": "error", "error": "invalid_request", "message": "A message must be a JSON object."}
                    )
                    continue
                action = message.get("action") if isinstance(message, dict) else None
                if action == "subscribe":
                    await add(message.get("request_ids"))
                elif action == "unsubscribe":
                    ids = message.get("request_ids")
                    for request_id in ids if isinstance(ids, list) else []:
                        if isinstance(request_id, str):
                            drop(request_id)
                else:
                    await socket.send_json(
                        {
                            "type": "error",
                            "error": "invalid_request",
                            "message": "action must be subscribe or unsubscribe",
                        }
                    )

        async def forward() -> None:
            while True:
                request_id = await queue.get()
                await push(request_id, snapshot=False)

        initial = [i for i in (req.query.get("request_ids") or req.query.get("request_id") or "").split(",") if i]
        if initial:
            await add(initial)
        tasks = [asyncio.create_task(read_client()), asyncio.create_task(forward())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        except WebSocketDisconnect:
            pass
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, Exception):
                    await t
            for request_id in list(watching):
                hub.unwatch(request_id, queue)

    return subscribe
