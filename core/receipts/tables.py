"""Signed receipts, their revisions, and the keys that signed them.

Piccolo tables of this area (money in integer micro-USDC, times in unix milliseconds);
its app is `migrations.APP`."""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class Receipt(Table, tablename="tw_receipts", db=PLACEHOLDER_ENGINE):
    """The current signed revision of each receipt, plus private columns never served."""

    receipt_id = Varchar(length=40, primary_key=True)
    agent_id = Varchar(length=36)  # indexed with created_ms (tw_receipts_agent_newest)
    category = Varchar(length=32)
    tool = Varchar(length=64, null=True, default=None)  # "credits_top_up" for top-ups (not spend)
    amount = BigInt()
    status = Varchar(length=24)
    revision = Integer()
    job_id = Varchar(length=40, null=True, default=None)  # partial index tw_receipts_job
    body = Text()  # the receipt exactly as served (JSON)
    provider_cost = BigInt(null=True, default=None)  # private: never served, never signed
    created_ms = BigInt()  # indexed with receipt_id (tw_receipts_newest)
    # Copies of two body fields, kept current at each revision, and the tool's run time
    # (private, never served): what the operator's figures group by without parsing JSON.
    payment_method = Varchar(length=16, null=True, default=None)
    execution_status = Varchar(length=16, null=True, default=None)
    duration_ms = Integer(null=True, default=None)


class ReceiptRevision(Table, tablename="tw_receipt_revisions", db=PLACEHOLDER_ENGINE):
    """Superseded signed revisions, append-only (the current one is in tw_receipts)."""

    id = Varchar(length=48, primary_key=True)  # "<receipt_id>:<revision>"
    receipt_id = Varchar(length=40, index=True)
    revision = Integer()
    body = Text()
    created_ms = BigInt()


class SigningKey(Table, tablename="tw_signing_keys", db=PLACEHOLDER_ENGINE):
    """Public halves of receipt signing keys (the private seed stays in TOLLWAY_HOME)."""

    key_id = Varchar(length=40, primary_key=True)
    public_key = Varchar(length=64)
    active = Boolean(default=True)
    created_ms = BigInt()


class ReceiptDay(Table, tablename="tw_receipt_days", db=PLACEHOLDER_ENGINE):
    """Revenue of one ended UTC day by category and payment method, summed from its receipts
    (core/receipts/day_totals.py); valid while its day's mark says so."""

    id = Varchar(length=80, primary_key=True)  # "<day>:<category>:<payment_method>"
    day = BigInt(index=True)  # days since 1970-01-01, UTC
    category = Varchar(length=32)
    payment_method = Varchar(length=16)
    total = BigInt()  # micro-USDC


class ReceiptDayMark(Table, tablename="tw_receipt_day_marks", db=PLACEHOLDER_ENGINE):
    """Per ended day: how many times a receipt of it was revised after it ended, and at which
    of those counts its totals were summed (they are valid while the two are equal)."""

    day = BigInt(primary_key=True)
    changes = BigInt(default=0)
    summed_at = BigInt(null=True, default=None)


TABLES: tuple[type[Table], ...] = (
    Receipt,
    ReceiptRevision,
    SigningKey,
    ReceiptDay,
    ReceiptDayMark,
)
