"""Reading the bodies of watch creation and change: each failing field is named in
one refusal (docs/watches.md, "Refusals"). Amounts are read without floats."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from msgspec import UNSET, UnsetType

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.money import MICRO, AmountError, to_micro
from tollway._core.credits.top_ups import decimal_body
from tollway._core.watches.sources import WatchSource
from tollway._core.webhooks.targets import target_problem
from tollway._core.wire.watches import MAX_SPEND_DOLLARS

MAX_SPEND = MAX_SPEND_DOLLARS * MICRO
_TEXT_LIMITS = {"entity_type": 32, "attribute": 64, "key": 256}
CREATE_FIELDS = ("entity_type", "attribute", "key", "max_spend", "webhook_url")
CHANGE_FIELDS = ("max_spend", "webhook_url", "paused")


@dataclasses.dataclass(frozen=True)
class NewWatch:
    entity_type: str
    attribute: str
    key: str
    max_spend: int  # micro-USDC
    webhook_url: str | None


@dataclasses.dataclass(frozen=True)
class WatchChange:
    max_spend: int | None  # micro-USDC; None: unchanged
    webhook_url: str | None | UnsetType  # None: stop sending; UNSET: unchanged
    paused: bool | None  # None: unchanged


@dataclasses.dataclass(frozen=True)
class Problem:
    field: str
    message: str
    code: str = "invalid_request"  # or invalid_input (a key the source cannot name)

    def detail(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


def dollars_text(micro: int) -> str:
    """Micro-USDC as a short dollar figure for messages (20000 -> "0.02")."""
    text = f"{micro // MICRO}.{micro % MICRO:06d}".rstrip("0")
    return text[:-1] if text.endswith(".") else text


def watchable_pairs(sources: Mapping[str, WatchSource]) -> list[dict[str, str]]:
    """Every (entity_type, attribute) a watch may name, sorted."""
    pairs = sorted((entity_type, s.attribute) for s in sources.values() for entity_type in s.entity_types)
    return [{"entity_type": e, "attribute": a} for e, a in pairs]


def _summary(problems: list[Problem]) -> str:
    if len(problems) == 1:
        return f"{problems[0].field} {problems[0].message}."
    return f"{len(problems)} fields are invalid: {', '.join(p.field for p in problems)}."


def refusal(problems: list[Problem]) -> ServiceError:
    """400 naming every problem: `invalid_request` unless every problem is semantic (`invalid_input`)."""
    code = "invalid_input" if all(p.code == "invalid_input" for p in problems) else "invalid_request"
    return ServiceError(400, code, _summary(problems), [p.detail() for p in problems])


def not_watchable(
    entity_type: str, attribute: str, sources: Mapping[str, WatchSource], others: list[Problem]
) -> ServiceError:
    """400 `invalid_input`: the pair cannot be watched; `details.watchable` lists what can,
    `details.fields` every failing field (the pair's and any other)."""
    pairs = watchable_pairs(sources)
    named = (
        ", ".join(f"{p['entity_type']} {p['attribute']}" for p in pairs) or "nothing (no watchable source is installed)"
    )
    field = "entity_type" if attribute in sources else "attribute"
    problem = Problem(
        field, f"entity_type {entity_type!r} with attribute {attribute!r} cannot be watched", "invalid_input"
    )
    return ServiceError(
        400,
        "invalid_input",
        f"entity_type {entity_type!r} with attribute {attribute!r} cannot be watched. "
        f"What can be watched (entity_type attribute): {named}.",
        {"watchable": pairs, "fields": [p.detail() for p in [problem, *others]]},
    )


def _body(raw: bytes, accepted: tuple[str, ...]) -> tuple[dict[str, Any], list[Problem]]:
    obj = decimal_body(raw)
    return obj, [Problem(name, "is not an accepted field") for name in sorted(set(obj) - set(accepted))]


def _text(obj: dict[str, Any], name: str, problems: list[Problem]) -> str | None:
    value = obj.get(name)
    limit = _TEXT_LIMITS[name]
    if value is None:
        problems.append(Problem(name, "is required"))
    elif not isinstance(value, str):
        problems.append(Problem(name, "must be a string"))
    elif not 1 <= len(value) <= limit:
        problems.append(Problem(name, f"must be 1 to {limit} characters"))
    else:
        return value
    return None


def _max_spend(value: Any, price_per_change: int, problems: list[Problem]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        problems.append(Problem("max_spend", "must be a number of dollars"))
        return None
    try:
        micro = to_micro(value)
    except AmountError:
        problems.append(Problem("max_spend", "must be a number of dollars with at most 6 decimals"))
        return None
    if micro < price_per_change:
        problems.append(
            Problem("max_spend", f"must be at least {dollars_text(price_per_change)} (the price of one change)")
        )
    elif micro > MAX_SPEND:
        problems.append(Problem("max_spend", f"must be at most {MAX_SPEND_DOLLARS}"))
    else:
        return micro
    return None


def _webhook_url(value: Any, allow_insecure: bool, problems: list[Problem]) -> str | None:
    if not isinstance(value, str):
        problems.append(Problem("webhook_url", "must be a string (an https:// URL) or null"))
        return None
    problem = target_problem(value, allow_insecure=allow_insecure)
    if problem is not None:
        problems.append(Problem("webhook_url", problem))
        return None
    return value


def parse_create(
    raw: bytes, *, sources: Mapping[str, WatchSource], price_per_change: int, allow_insecure: bool
) -> NewWatch:
    obj, problems = _body(raw, CREATE_FIELDS)
    entity_type = _text(obj, "entity_type", problems)
    attribute = _text(obj, "attribute", problems)
    key = _text(obj, "key", problems)
    max_spend = _max_spend(obj["max_spend"], price_per_change, problems) if "max_spend" in obj else None
    if "max_spend" not in obj:
        problems.append(Problem("max_spend", "is required"))
    url = obj.get("webhook_url")
    webhook_url = _webhook_url(url, allow_insecure, problems) if url is not None else None
    if entity_type is not None and attribute is not None:
        source = sources.get(attribute)
        if source is None or entity_type not in source.entity_types:
            raise not_watchable(entity_type, attribute, sources, problems)
        if key is not None and source.check_key is not None:
            why = source.check_key(key)
            if why:
                problems.append(Problem("key", why, "invalid_input"))
    if problems:
        raise refusal(sorted(problems, key=lambda p: CREATE_FIELDS.index(p.field) if p.field in CREATE_FIELDS else -1))
    assert entity_type is not None and attribute is not None and key is not None and max_spend is not None
    return NewWatch(entity_type, attribute, key, max_spend, webhook_url)


def parse_change(raw: bytes, *, price_per_change: int, allow_insecure: bool) -> WatchChange:
    obj, problems = _body(raw, CHANGE_FIELDS)
    if not obj:
        raise ServiceError(
            400,
            "invalid_request",
            "Name at least one of max_spend, webhook_url, paused.",
            [{"field": "$", "message": "expected at least one of max_spend, webhook_url, paused"}],
        )
    max_spend = _max_spend(obj["max_spend"], price_per_change, problems) if "max_spend" in obj else None
    webhook_url: str | None | UnsetType = UNSET
    if "webhook_url" in obj:
        webhook_url = None if obj["webhook_url"] is None else _webhook_url(obj["webhook_url"], allow_insecure, problems)
    paused = obj.get("paused")
    if "paused" in obj and not isinstance(paused, bool):
        problems.append(Problem("paused", "must be true or false"))
    if problems:
        raise refusal(problems)
    return WatchChange(max_spend, webhook_url, paused)
