"""The fact store's tables: fact rows, the head of each series, and the current numbers Benchmark reads."""

from __future__ import annotations

from piccolo.columns import BigInt, BigSerial, Boolean, DoublePrecision, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class FactRecord(Table, tablename="tw_facts", db=PLACEHOLDER_ENGINE):
    """History: one row each time a recorded value of an entity differs from the
    last one seen for that (attribute, entity_key, source, owner) (docs/history.md).

    `owner` is "" for facts everyone may read, else the agent whose call recorded
    them; `listed` false marks an entity that stopped being listed (value null)."""

    id = BigSerial(primary_key=True)
    attribute = Varchar(length=64)
    entity_key = Varchar(length=256)
    source = Varchar(length=120)
    owner = Varchar(length=36, default="")
    listed = Boolean(default=True)
    value = Text()  # RFC 8785 canonical JSON
    value_hash = Varchar(length=64)
    as_of = Varchar(length=40, null=True, default=None)
    first_seen_ms = BigInt()
    changed_on = Varchar(length=10)  # UTC day first seen, YYYY-MM-DD
    recorded_by = Varchar(length=36, null=True, default=None)


class FactHead(Table, tablename="tw_fact_heads", db=PLACEHOLDER_ENGINE):
    """The latest fact row of each series: the compare-and-set point that makes a
    new row only when the value changed, even under concurrent lookups."""

    id = BigSerial(primary_key=True)
    attribute = Varchar(length=64)
    entity_key = Varchar(length=256)
    source = Varchar(length=120)
    owner = Varchar(length=36, default="")
    value_hash = Varchar(length=64)
    listed = Boolean(default=True)
    fact_id = BigInt()


class FactNumber(Table, tablename="tw_fact_numbers", db=PLACEHOLDER_ENGINE):
    """Benchmark's read path: the current public number of each benchmarkable field
    of each entity, with the tool's declared peer fields as columns (lower case)."""

    id = BigSerial(primary_key=True)
    attribute = Varchar(length=64)
    source = Varchar(length=120)
    entity_key = Varchar(length=256)
    field = Varchar(length=64)
    number = DoublePrecision()
    # One number for (attribute, field, source) (`peer_group()`): Benchmark's indexes lead
    # with it, a third the size of ones keyed by the three strings.
    peer_group = BigInt(default=0)
    peer_1 = Varchar(length=120, null=True, default=None)
    peer_2 = Varchar(length=120, null=True, default=None)
    peer_3 = Varchar(length=120, null=True, default=None)
    peer_4 = Varchar(length=120, null=True, default=None)
    peer_5 = Varchar(length=120, null=True, default=None)
    as_of = Varchar(length=40, null=True, default=None)
    updated_ms = BigInt()


HISTORY_TABLES: tuple[type[Table], ...] = (
    FactRecord,
    FactHead,
    FactNumber,
)
