"""Extension slots of kernel answers: keys a tool's declared hook adds to a `JobAccepted`
(`accepted_fields`) or a `JobStatus` (`job_extras`), encoded at the top level after the
kernel's own fields, and the slot keys the product documents (the OpenAPI and MCP schemas
show them whichever plugins are installed)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from tollway._core.wire.calls import JobAccepted, JobStatus

# The documented keys of each slot and their types: a compute goal's `goal_id` on its 202,
# an email job's `email_tracking` ({from, to, subject, status, opens, clicks}) on its Job.
DOCUMENTED: dict[type, tuple[tuple[str, Any], ...]] = {
    JobAccepted: (("goal_id", str | UnsetType),),
    JobStatus: (("email_tracking", dict[str, Any] | UnsetType),),
}


@functools.cache
def _slotted(base: type[msgspec.Struct], keys: tuple[str, ...]) -> type[msgspec.Struct]:
    """`base` with `keys` appended (each absent unless given), under `base`'s name."""
    types = dict(DOCUMENTED.get(base, ()))
    made = msgspec.defstruct(
        base.__name__, [(k, types.get(k, Any), UNSET) for k in keys], bases=(base,), module=__name__
    )
    made.__doc__ = base.__doc__
    made.__slot_keys__ = keys  # type: ignore[attr-defined]
    return made


def extended(value: msgspec.Struct, fields: Mapping[str, Any]) -> msgspec.Struct:
    """`value` with a tool's `fields`: a kernel field is replaced, any other key rides the slot."""
    own = {k: v for k, v in fields.items() if k in value.__struct_fields__}
    extra = {k: v for k, v in fields.items() if k not in value.__struct_fields__}
    if own:
        value = msgspec.structs.replace(value, **own)
    if not extra:
        return value
    return _slotted(type(value), tuple(extra))(**msgspec.structs.asdict(value), **extra)


def documented(base: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """The shape the schemas document for `base`: its fields and its slot's documented keys."""
    return _slotted(base, tuple(k for k, _ in DOCUMENTED.get(base, ()))) if base in DOCUMENTED else base


__all__ = ["DOCUMENTED", "documented", "extended"]
