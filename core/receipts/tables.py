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
    agent_id = Varchar(length=36, index=True)
    category = Varchar(length=32)
    tool = Varchar(length=64, null=True, default=None)  # "credits_top_up" for top-ups (not spend)
    amount = BigInt()
    status = Varchar(length=24)
    revision = Integer()
    job_id = Varchar(length=40, null=True, default=None, index=True)
    body = Text()  # the receipt exactly as served (JSON)
    provider_cost = BigInt(null=True, default=None)  # private: never served, never signed
    created_ms = BigInt(index=True)


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


TABLES: tuple[type[Table], ...] = (
    Receipt,
    ReceiptRevision,
    SigningKey,
)
