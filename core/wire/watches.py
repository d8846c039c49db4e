"""Watches on the wire: the Watch resource, its create and change bodies, and the
`{success, data}` answers of the watch routes. Money fields are JSON numbers in dollars."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

# The most a watch may spend (dollars); its least is the price of one change (a setting).
MAX_SPEND_DOLLARS = 100

Dollars = Annotated[float, Meta(ge=0)]
MaxSpend = Annotated[
    float, Meta(gt=0, le=MAX_SPEND_DOLLARS, description="Dollars: at least the price of one change, at most 100.")
]
WebhookUrl = Annotated[
    str, Meta(min_length=1, max_length=2048, description="HTTPS URL that receives each change, signed.")
]


class Watch(msgspec.Struct):
    """One watch. `webhook_secret` appears only in the answer that set or replaced the
    webhook URL (create with a URL, or a change giving a new URL)."""

    id: str
    entity_type: str
    attribute: str
    key: str
    max_spend: Dollars
    spent: Dollars
    changes_delivered: int
    status: Literal["running", "paused"]
    pause_reason: Literal["cap", "credits", "agent"] | None
    webhook_url: str | None
    price_per_change: Dollars
    last_delivery_at: str | None
    created_at: str
    updated_at: str
    webhook_secret: str | UnsetType = UNSET


class WatchCreateRequest(msgspec.Struct, forbid_unknown_fields=True):
    """POST /v1/tools/watch."""

    entity_type: Annotated[str, Meta(min_length=1, max_length=32, description="The kind of entity, e.g. `company`.")]
    attribute: Annotated[
        str, Meta(min_length=1, max_length=64, description="The watched attribute (a watchable source).")
    ]
    key: Annotated[str, Meta(min_length=1, max_length=256, description="The source's own identifier of the entity.")]
    max_spend: MaxSpend
    webhook_url: WebhookUrl | None = None


class WatchUpdateRequest(msgspec.Struct, forbid_unknown_fields=True):
    """PATCH /v1/tools/watch/{id}: any of the three. A new `webhook_url` gets a new
    secret (in this answer only); null stops sending. `paused: false` resumes only a
    watch its owner paused."""

    max_spend: MaxSpend | UnsetType = UNSET
    webhook_url: WebhookUrl | None | UnsetType = UNSET
    paused: bool | UnsetType = UNSET


class WatchAnswer(msgspec.Struct):
    data: Watch
    success: bool = True


class WatchList(msgspec.Struct):
    """The caller's watches that are not deleted, newest first (no secrets)."""

    watches: list[Watch]


class WatchListAnswer(msgspec.Struct):
    data: WatchList
    success: bool = True


class WatchDeleted(msgspec.Struct):
    id: str
    deleted: bool


class WatchDeletedAnswer(msgspec.Struct):
    data: WatchDeleted
    success: bool = True


class Watchable(msgspec.Struct):
    """One (entity_type, attribute) pair a watch may name."""

    entity_type: str
    attribute: str


class WatchSourcePolled(msgspec.Struct):
    """POST /v1/tools/internal/watch-sources/{attribute}/poll (operator): one poll, done."""

    attribute: str
    polled_at: str
    changes_detected: int
