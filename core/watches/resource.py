"""The Watch resource: create, list, change and delete an agent's watches, with the
watch state rules an owner's changes follow (docs/watches.md). Free: nothing here
charges; each delivered change is charged by the delivery engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import UNSET

from tollway._core.auth.auth import Authenticator, Caller, require_proven
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.events import WATCH_DELIVERIES, EventBus
from tollway._core.basics.ids import iso, new_uuid, now_ms
from tollway._core.basics.money import MICRO
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.storage import sql
from tollway._core.watches import tables
from tollway._core.watches.requests import WatchChange, parse_change, parse_create
from tollway._core.watches.sources import WatchSource
from tollway._core.webhooks.signing import new_secret
from tollway._core.wire.watches import Watch, WatchAnswer, WatchDeleted, WatchDeletedAnswer, WatchList, WatchListAnswer

MAX_WATCHES = 100  # undeleted watches per agent
W, D = tables.Watch, tables.WatchDelivery  # the tables (`Watch` here is the wire resource)

# Raw: a PostgreSQL advisory lock (the ORM has none); it serialises one agent's creations.
LOCK_AGENT = sql.Statement("SELECT pg_advisory_xact_lock(hashtext({})) AS locked")


def watch_resource(row: Mapping[str, Any], *, secret: str | None = None) -> Watch:
    """A `tw_watches` row as the Watch resource (money in dollars); `secret` only when just set."""
    last = row["last_delivery_ms"]
    return Watch(
        id=row["id"],
        entity_type=row["entity_type"],
        attribute=row["attribute"],
        key=row["entity_key"],
        max_spend=int(row["max_spend"]) / MICRO,
        spent=int(row["spent"]) / MICRO,
        changes_delivered=int(row["changes_delivered"]),
        status=row["status"],
        pause_reason=row["pause_reason"],
        webhook_url=row["webhook_url"],
        price_per_change=int(row["price_per_change"]) / MICRO,
        last_delivery_at=iso(int(last)) if last is not None else None,
        created_at=iso(int(row["created_ms"])),
        updated_at=iso(int(row["updated_ms"])),
        webhook_secret=secret if secret is not None else UNSET,
    )


def next_state(row: Mapping[str, Any], change: WatchChange) -> tuple[str, str | None]:
    """(status, pause_reason) after an owner's change, whatever the watch's state now.

    A new cap resumes a watch the cap paused when the next change fits under it;
    `paused: true` pauses for the owner whatever the state; `paused: false` resumes
    only a watch its owner paused (a cap or credits pause stays)."""
    status, reason = row["status"], row["pause_reason"]
    if change.max_spend is not None and status == "paused" and reason == "cap":
        if int(row["spent"]) + int(row["price_per_change"]) <= change.max_spend:
            status, reason = "running", None
    if change.paused is True:
        status, reason = "paused", "agent"
    elif change.paused is False and status == "paused" and reason == "agent":
        status, reason = "running", None
    return status, reason


def may_change(caller: Caller | None, req: CallRequest) -> Caller:
    """A caller allowed to change watches: a write proof, a wallet the front holds the
    key of, or an access token that came from signing in (never an operator-issued one)."""
    if caller is None:
        raise ServiceError(
            401,
            "unauthorized",
            "Changing watches needs X-Agent-ID with a write X-Agent-Proof, or a signed-in access token.",
        )
    if caller.via == "id":
        raise ServiceError(
            401,
            "invalid_agent_proof",
            "Changing watches needs a write X-Agent-Proof signed by the wallet in X-Agent-ID.",
            {"reason": "missing"},
        )
    if caller.via == "token" and caller.token_origin != "sign_in":
        raise ServiceError(
            403,
            "token_cannot_change_watches",
            "This access token was issued by the operator and cannot change watches. Sign in with the owner's "
            "account (POST /v1/auth/sign-in with the wallet's write proof) and use that token, or send a write proof.",
        )
    return caller


def may_list(caller: Caller | None, req: CallRequest) -> Caller:
    """A caller allowed to list watches: a read proof, an access token or a held key, in
    every proof mode (a watch shows its webhook URL, private data; docs/auth.md)."""
    if caller is None:
        raise ServiceError(
            401, "unauthorized", "Send X-Agent-ID with an X-Agent-Proof (scope read), or an access token."
        )
    return require_proven(caller, req, "A watch (with its webhook URL)")


class Watches:
    """The watch routes' kernel side. `sources` is the live registry of watchable
    attributes (attribute -> WatchSource); `events` carries WATCH_DELIVERIES, published
    when an owner's change sets a paused watch running (its held changes are delivered)."""

    def __init__(
        self,
        *,
        db: Any,
        auth: Authenticator,
        sources: Mapping[str, WatchSource],
        events: EventBus,
        price_per_change: int,
        allow_insecure_webhooks: bool,
    ) -> None:
        self.db = db
        self.auth = auth
        self.sources = sources
        self.events = events
        self.price_per_change = price_per_change
        self.allow_insecure_webhooks = allow_insecure_webhooks

    # -- who may ---------------------------------------------------------------------------
    async def writer(self, req: CallRequest) -> Caller:
        return may_change(await self.auth.caller(req, scope="write"), req)

    async def reader(self, req: CallRequest) -> Caller:
        return may_list(await self.auth.caller(req, scope="read"), req)

    # -- the routes --------------------------------------------------------------------------
    async def create(self, req: CallRequest, caller: Caller | None = None) -> Answer:
        """POST /v1/tools/watch: 201 with the watch (and its webhook secret, once)."""
        caller = caller or await self.writer(req)
        new = parse_create(
            req.body,
            sources=self.sources,
            price_per_change=self.price_per_change,
            allow_insecure=self.allow_insecure_webhooks,
        )
        secret = new_secret() if new.webhook_url is not None else None
        now = now_ms()
        async with self.db.transaction():
            await self._lock_agent(caller.agent_id)
            held = await W.count().where(W.agent_id == caller.agent_id, W.deleted_ms.is_null())
            if held >= MAX_WATCHES:
                raise ServiceError(
                    409,
                    "watch_limit_reached",
                    f"An agent may hold at most {MAX_WATCHES} watches; delete one to create another.",
                    {"limit": MAX_WATCHES},
                )
            row = {
                "id": new_uuid(),
                "agent_id": caller.agent_id,
                "entity_type": new.entity_type,
                "attribute": new.attribute,
                "entity_key": new.key,
                "max_spend": new.max_spend,
                "spent": 0,
                "price_per_change": self.price_per_change,
                "changes_delivered": 0,
                "status": "running",
                "pause_reason": None,
                "pause_notified": False,
                "webhook_url": new.webhook_url,
                "webhook_secret": secret,
                "last_delivery_ms": None,
                "created_ms": now,
                "updated_ms": now,
                "deleted_ms": None,
            }
            await W.insert(W(**row))
        return Answer(201, WatchAnswer(data=watch_resource(row, secret=secret)))

    async def list(self, req: CallRequest, caller: Caller | None = None) -> WatchListAnswer:
        """GET /v1/tools/watch: the caller's undeleted watches, newest first."""
        caller = caller or await self.reader(req)
        rows = (
            await W.select()
            .where(W.agent_id == caller.agent_id, W.deleted_ms.is_null())
            .order_by(W.created_ms, W.id, ascending=False)
        )
        return WatchListAnswer(data=WatchList(watches=[watch_resource(r) for r in rows]))

    async def update(self, req: CallRequest, watch_id: str, caller: Caller | None = None) -> WatchAnswer:
        """PATCH /v1/tools/watch/{id}: any of max_spend, webhook_url, paused."""
        caller = caller or await self.writer(req)
        change = parse_change(
            req.body, price_per_change=self.price_per_change, allow_insecure=self.allow_insecure_webhooks
        )
        async with self.db.transaction():
            row = await self._owned(caller, watch_id, lock=True)
            status, reason = next_state(row, change)
            max_spend = change.max_spend if change.max_spend is not None else int(row["max_spend"])
            url, secret = row["webhook_url"], row["webhook_secret"]
            if change.webhook_url is not UNSET:
                url = change.webhook_url
                secret = new_secret() if url is not None else None
            updated = (
                await W.update(
                    {
                        W.max_spend: max_spend,
                        W.webhook_url: url,
                        W.webhook_secret: secret,
                        W.status: status,
                        W.pause_reason: reason,
                        W.updated_ms: max(now_ms(), int(row["updated_ms"])),
                    }
                )
                .where(W.id == row["id"])
                .returning(*W.all_columns())
            )[0]
        if row["status"] != "running" and status == "running":
            await self.events.publish(
                WATCH_DELIVERIES, row["id"]
            )  # after the commit: the engine delivers what was held
        shown = secret if change.webhook_url is not UNSET and secret is not None else None
        return WatchAnswer(data=watch_resource(updated, secret=shown))

    async def delete(self, req: CallRequest, watch_id: str, caller: Caller | None = None) -> WatchDeletedAnswer:
        """DELETE /v1/tools/watch/{id}: the watch is deleted and its undelivered changes dropped, together."""
        caller = caller or await self.writer(req)
        now = now_ms()
        async with self.db.transaction():
            row = await self._owned(caller, watch_id, lock=True)
            await W.update({W.deleted_ms: now, W.updated_ms: now}).where(W.id == row["id"])
            await D.update({D.state: "dropped"}).where(D.watch_id == row["id"], D.state == "pending")
        return WatchDeletedAnswer(data=WatchDeleted(id=row["id"], deleted=True))

    # -- rows ------------------------------------------------------------------------------
    async def _owned(self, caller: Caller, watch_id: str, *, lock: bool) -> Mapping[str, Any]:
        """The caller's undeleted watch `watch_id` (locked for this transaction), else 404."""
        query = W.select().where(W.id == watch_id.lower(), W.agent_id == caller.agent_id, W.deleted_ms.is_null())
        row = await (query.lock_rows() if lock and sql.on_postgres() else query).first()
        if row is None:
            raise ServiceError(404, "not_found", f"No watch {watch_id} for this agent.")
        return row

    async def _lock_agent(self, agent_id: str) -> None:
        """Serialise one agent's creations, so the watch count cannot be raced past its limit
        (SQLite write transactions are serial already)."""
        if sql.on_postgres():
            await LOCK_AGENT.execute(f"tollway.watches:{agent_id}")
