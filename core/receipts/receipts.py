"""Receipts: one signed record per charge, refund or failed call, and its revisions.

The served body is exactly what is signed (plus `digest` and `signature`);
private columns (provider cost) live beside it and are never served or signed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import msgspec

from tollway._core.basics.ids import iso, now_ms, sorted_id
from tollway._core.basics.money import usdc
from tollway._core.receipts import day_totals
from tollway._core.receipts.receipt_signing import ReceiptSigner, metadata_digest
from tollway._core.receipts.tables import Receipt, ReceiptRevision, SigningKey
from tollway._core.storage import sql
from tollway._core.wire import receipts as wire

# The receipt writer's statements, raw: issuing is on the paid path (bench/paid_calls.py), and
# a re-sign is a compare-and-swap on the revision (read, sign, update only if unchanged).
# A new receipt's row takes `ReceiptBook.sign`'s values in order.
_ISSUE = (
    "INSERT INTO tw_receipts (receipt_id, agent_id, category, tool, amount, status, revision, job_id, body, "
    "provider_cost, created_ms, payment_method, execution_status, duration_ms) "
    "VALUES ({}, {}, {}, {}, {}, {}, 1, {}, {}, {}, {}, {}, {}, {})"
)
_CURRENT = "SELECT body, revision, created_ms FROM tw_receipts WHERE receipt_id = {}"
_RESIGN = (
    "UPDATE tw_receipts SET body = {}, revision = {}, status = {}, execution_status = {}, "
    "duration_ms = COALESCE({}, duration_ms) WHERE receipt_id = {} AND revision = {} RETURNING receipt_id"
)
# One key is active: the newest published (by first start), whichever process started
# last. During a rolling restart onto a new key, an old process that restarts still
# signs with the old key, but the flag stays on the new one; older keys stay published
# so their receipts verify (docs/deploy.md, "Rotating keys").
_ACTIVATE_NEWEST = sql.statement(
    "UPDATE tw_signing_keys SET active = (key_id = "
    "(SELECT key_id FROM tw_signing_keys ORDER BY created_ms DESC, key_id DESC LIMIT 1))"
)
_ARCHIVE = "INSERT INTO tw_receipt_revisions (id, receipt_id, revision, body, created_ms) VALUES ({}, {}, {}, {}, {})"
# PostgreSQL: the re-sign and the archive of the revision it supersedes in one statement (a
# data-modifying CTE: a job's completion re-signs its receipt on the worker's path).
_RESIGN_AND_ARCHIVE = (
    "WITH u AS (UPDATE tw_receipts SET body = {}, revision = {}, status = {}, execution_status = {}, "
    "duration_ms = COALESCE({}, duration_ms) WHERE receipt_id = {} AND revision = {} RETURNING receipt_id), "
    "a AS (INSERT INTO tw_receipt_revisions (id, receipt_id, revision, body, created_ms) "
    "SELECT {}::text, receipt_id, {}::bigint, {}::text, {}::bigint FROM u) SELECT receipt_id FROM u"
)


@dataclasses.dataclass(kw_only=True, slots=True)
class ReceiptDraft:
    """Everything a new receipt says, typed: what `ReceiptBook.issue` signs. `amount` and
    `service_fee` are micro-USDC; `provider_cost` is stored beside the receipt, never signed;
    `metadata` is signed as its digest only. `goal_id`, `soul_agent_id` and `service_fee` are
    the three signed fields plugins fill (through the tool's declarations and `Admission`).
    Made once per paid call and never changed (not frozen: a frozen dataclass of this size
    takes four times as long to make)."""

    agent_id: str
    category: str
    subcategory: str | None
    amount: int
    status: str
    execution_status: str
    payment_method: str
    tool: str | None
    request_id: str | None
    settlement_tx: str | None = None
    job_id: str | None = None
    memo: str | None = None
    decision_context: Any = None
    metadata: Any = None
    provider_cost: int | None = None
    settled: bool = True
    receipt_id: str | None = None
    goal_id: str | None = None
    soul_agent_id: str | None = None
    service_fee: int = 0
    duration_ms: int | None = None  # the tool's run time, stored beside the receipt, never signed


@dataclasses.dataclass(frozen=True, slots=True)
class Revision:
    """A receipt's next revision, signed from the one it supersedes (`ReceiptBook.next_revision`):
    what a re-sign writes, a compare-and-swap on `old_revision`, and what archiving the
    superseded revision writes."""

    receipt_id: str
    signed: dict[str, Any]
    text: str  # the signed body as stored
    old_revision: int
    old_body: str
    at_ms: int

    def resign_values(self, duration_ms: int | None) -> tuple[Any, ...]:
        """The re-sign's values: body, revision, status, execution_status, duration_ms, receipt_id, old revision."""
        signed = self.signed
        return (
            self.text,
            self.old_revision + 1,
            signed["status"],
            signed.get("execution_status"),
            duration_ms,
            self.receipt_id,
            self.old_revision,
        )

    def archive_values(self) -> tuple[Any, ...]:
        """The archived revision's id, revision, body and time (its receipt_id is the re-sign's)."""
        return (f"{self.receipt_id}:{self.old_revision}", self.old_revision, self.old_body, self.at_ms)


class ReceiptBook:
    def __init__(self, signer: ReceiptSigner) -> None:
        self.signer = signer

    async def publish_key(self) -> None:
        await SigningKey.insert(
            SigningKey(
                key_id=self.signer.key_id, public_key=self.signer.public_key_b64url, active=True, created_ms=now_ms()
            )
        ).on_conflict(action="DO NOTHING")
        await _ACTIVATE_NEWEST.execute()

    async def keys(self) -> wire.ReceiptKeys:
        rows = await SigningKey.select().order_by(SigningKey.created_ms)
        return wire.ReceiptKeys(
            [
                wire.SigningKeyInfo(
                    key_id=r["key_id"],
                    alg="Ed25519",
                    public_key=r["public_key"],
                    created_at=iso(r["created_ms"]),
                    active=bool(r["active"]),
                )
                for r in rows
            ]
        )

    async def issue(self, draft: ReceiptDraft) -> dict[str, Any]:
        """Sign and store a new receipt (revision 1) from `draft`; the signed body."""
        signed, values = self.sign(draft)
        await sql.fetch(_ISSUE, *values)
        return signed

    def sign(self, draft: ReceiptDraft) -> tuple[dict[str, Any], tuple[Any, ...]]:
        """A new receipt (revision 1) signed from `draft`, not stored: the signed body, and the
        values of its row in `_ISSUE`'s order (the revision aside, always 1)."""
        d = draft
        created = now_ms()
        job_id = d.job_id or d.request_id  # a receipt's job_id is the request that originated it
        created_at = iso(created)
        # `wire.ReceiptBody`'s builtins (`msgspec.to_builtins` of one), its fields in their
        # (signed) order, made as the dict itself: no Struct to fill and convert on the paid path
        # (tests/kernel/test_paid_bodies.py holds the two equal)
        body = {
            "receipt_id": d.receipt_id or sorted_id("rcpt"),
            "agent_id": d.agent_id,
            "soul_agent_id": d.soul_agent_id,
            "category": d.category,
            "subcategory": d.subcategory,
            "tool": d.tool,
            "request_id": d.request_id,
            "amount_usdc": usdc(d.amount),
            "service_fee": usdc(d.service_fee),
            "payment_method": d.payment_method,
            "status": d.status,
            "execution_status": d.execution_status,
            "goal_id": d.goal_id,
            "revision": 1,
            "settlement_tx": d.settlement_tx,
            "memo": d.memo,
            "decisionContext": None if d.decision_context is None else msgspec.to_builtins(d.decision_context),
            "value_tag": None,
            "job_id": job_id,
            "metadata_digest": metadata_digest(d.metadata) if d.metadata is not None else None,
            "created_at": created_at,
            "settled_at": created_at if d.settled else None,
        }
        signed = self.signer.sign(body)
        text = msgspec.json.encode(signed).decode()
        values = (
            signed["receipt_id"],
            d.agent_id,
            d.category,
            d.tool,
            d.amount,
            d.status,
            job_id,
            text,
            d.provider_cost,
            created,
            d.payment_method,
            d.execution_status,
            d.duration_ms,
        )
        return signed, values

    async def revise(
        self, receipt_id: str, changes: Mapping[str, Any], *, duration_ms: int | None = None
    ) -> dict[str, Any]:
        """Re-sign with `changes` applied and revision + 1 (status change, settlement, refund);
        `duration_ms`, when given, is the tool's run time (a job's, once it ran).

        Compare-and-swap on the revision: a concurrent re-sign of the same receipt
        makes this one read the newer revision and apply its changes on top. A receipt of
        a day that has ended marks that day's revenue totals for summing again.
        """
        archive_too = sql.on_postgres()
        while True:
            row = await sql.fetch_one(_CURRENT, receipt_id)
            if row is None:
                raise LookupError(receipt_id)
            revision = self.next_revision(receipt_id, row["body"], int(row["revision"]), changes)
            # the superseded revision is archived; the current one lives in tw_receipts
            if archive_too:
                updated = await sql.fetch_one(
                    _RESIGN_AND_ARCHIVE, *revision.resign_values(duration_ms), *revision.archive_values()
                )
            else:
                updated = await sql.fetch_one(_RESIGN, *revision.resign_values(duration_ms))
            if updated is not None:
                break
        await self.resigned(int(row["created_ms"]))
        if not archive_too:
            archive_id, old, old_body, at = revision.archive_values()
            await sql.fetch(_ARCHIVE, archive_id, receipt_id, old, old_body, at)
        return revision.signed

    def next_revision(self, receipt_id: str, body: str, revision: int, changes: Mapping[str, Any]) -> Revision:
        """The revision after `revision` (whose stored body is `body`) with `changes` applied, signed."""
        new = msgspec.json.decode(body)
        new.update(changes)
        new["revision"] = revision + 1
        signed = self.signer.sign(new)
        return Revision(receipt_id, signed, msgspec.json.encode(signed).decode(), revision, body, now_ms())

    @staticmethod
    async def resigned(created_ms: int) -> None:
        """After a re-sign of a receipt created at `created_ms` (`revise`'s, or a caller's own
        statement writing a `next_revision`): an ended day's kept revenue totals are summed again."""
        await day_totals.revised(created_ms)

    async def get(self, receipt_id: str) -> dict[str, Any] | None:
        row = await Receipt.select(Receipt.body).where(Receipt.receipt_id == receipt_id).first()
        return msgspec.json.decode(row["body"]) if row else None

    async def served(self, receipt_id: str) -> wire.Receipt | None:
        """The receipt as served (a field the type does not know fails loudly rather
        than being dropped from a signed body)."""
        row = await Receipt.select(Receipt.body).where(Receipt.receipt_id == receipt_id).first()
        return msgspec.json.decode(row["body"], type=wire.Receipt) if row else None

    async def revisions(self, receipt_id: str) -> list[dict[str, Any]]:
        """Every signed revision, oldest first: the archived ones and the current one."""
        rows = (
            await ReceiptRevision.select(ReceiptRevision.body)
            .where(ReceiptRevision.receipt_id == receipt_id)
            .order_by(ReceiptRevision.revision)
        )
        current = await self.get(receipt_id)
        return [msgspec.json.decode(r["body"]) for r in rows] + ([current] if current else [])
