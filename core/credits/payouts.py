"""Payouts: an agent's earnings withdrawn to a wallet as an x402 payment from the service's
own wallet (an EIP-3009 authorization signed with the payout key, settled through the
settlement backend: the embedded ledger on the local network, the facilitator elsewhere).

Only earnings leave: a payout may take what the agent's sales credited it (ledger kind
`sale_share`) less what it already withdrew, never credits granted, topped up or refunded
(`ledger_check` holds every agent to it). The credits are debited (ledger kind `payout`)
in the transaction that records the payout with its signed authorization. A backend that
settles in our database settles in that same transaction, so a payout there is paid or
never happened. Against a remote backend the payout stays `sending` until its fate is
known: a refusal does not give the credits back at once, since the signed authorization
stays valid and a late settlement could still pay it; they stay held until the chain shows
the authorization cancelled or its `validBefore` has passed unused (`resolve_stale`, run by
the reconciler), and only then come back (`payout_return`).
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
from piccolo.columns import BigInt, Text, Varchar
from piccolo.query.functions.aggregate import Sum
from piccolo.table import Table

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.ids import iso, new_id, now_ms
from tollway._core.basics.money import usdc
from tollway._core.credits import ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.payments import x402
from tollway._core.payments.eip3009 import make_payment, sign_authorization
from tollway._core.payments.networks import Network
from tollway._core.payments.settlement import SettlementBackend
from tollway._core.storage.tables import PLACEHOLDER_ENGINE

PAYOUT_KIND, RETURN_KIND = "payout", "payout_return"
EARNINGS_KINDS = (
    "sale_share",
    "sale_share_reversal",
    PAYOUT_KIND,
    RETURN_KIND,
)  # earned, less withdrawn, plus withdrawals returned
AUTHORIZATION_VALID_S = 3600
# a fate that proves the authorization can never move money (else a refusal may still be settled late)
UNUSABLE = ("authorization_canceled", "authorization_expired_unused")
# Without a chain reader to prove it unused, a refused authorization is taken as unused this long
# after its validBefore (a transfer sent before then has been mined or dropped by that time).
LATE_MARGIN_S = 600


class Payout(Table, tablename="tw_payouts", db=PLACEHOLDER_ENGINE):
    """One withdrawal of credits to a wallet, with the payment that carries it."""

    id = Varchar(length=40, primary_key=True)  # po_...
    agent_id = Varchar(length=36, index=True)
    to_address = Varchar(length=42)
    amount = BigInt()  # micro-USDC
    status = Varchar(length=12, index=True)  # sending, paid, failed
    payment = Text()  # the signed x402 payment (JSON): settling it again is idempotent
    settlement_tx = Varchar(length=66, null=True, default=None)
    reason = Text(null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()


PAYOUT_TABLES: tuple[type[Table], ...] = (Payout,)


def served(row: Any) -> dict[str, Any]:
    """A payout as an API answers it."""
    return {
        "payout_id": row["id"],
        "amount_usdc": usdc(int(row["amount"])),
        "to_address": row["to_address"],
        "status": row["status"],
        "settlement_tx": row["settlement_tx"],
        "reason": row["reason"],
        "created_at": iso(int(row["created_ms"])),
        "updated_at": iso(int(row["updated_ms"])),
    }


async def withdrawable(agent_id: str) -> int:
    """What the agent may still pay out (micro-USDC): its sales' shares, less its payouts
    not given back. Negative only inside a transaction about to be refused."""
    row = (
        await LedgerEntry.select(Sum(LedgerEntry.delta, alias="total"))
        .where((LedgerEntry.account == ledger.credits_account(agent_id)) & LedgerEntry.kind.is_in(list(EARNINGS_KINDS)))
        .first()
    )
    return int(row["total"] or 0)  # SUM of no rows is NULL


class Payouts:
    """Withdraws credits on-chain; `key` is the service wallet's private key (None: no payouts)."""

    def __init__(
        self,
        *,
        db: Any,
        backend: SettlementBackend,
        network: Network,
        key: str | None,
        authorization_valid_s: int = AUTHORIZATION_VALID_S,
    ) -> None:
        self.db = db
        self.authorization_valid_s = authorization_valid_s
        self.backend = backend
        self.network = network
        self.account = None
        if key:
            from eth_account import Account

            self.account = Account.from_key(key)

    @property
    def address(self) -> str | None:
        return self.account.address if self.account is not None else None

    def _payment(self, payout_id: str, to: str, amount: int) -> tuple[dict[str, Any], dict[str, Any]]:
        now = int(time.time())
        valid_s = self.authorization_valid_s
        requirements = x402.build_requirements(self.network, amount, to, payout_id, valid_s)
        auth, signature = sign_authorization(
            self.account, self.network, to=to, value=amount, valid_after=now - 60, valid_before=now + valid_s
        )
        return make_payment(self.network, requirements, auth, signature), requirements

    async def pay_out(self, agent_id: str, amount: int, to_address: str) -> dict[str, Any]:
        """Withdraw `amount` (micro-USDC) of the agent's credits to `to_address`."""
        if self.account is None:
            raise ServiceError(
                503,
                "payouts_unavailable",
                "Payouts are not configured on this service: the operator must set TOLLWAY_PAYOUT_KEY.",
            )
        if amount <= 0:
            raise ServiceError(
                400,
                "invalid_request",
                "The amount must be more than 0.",
                [{"field": "amount_usdc", "message": "must be more than 0"}],
            )
        payout_id = new_id("po")
        payment, requirements = self._payment(payout_id, to_address, amount)
        decoded = x402.decode_payment(payment)
        in_database = self.backend.settles_in_database
        async with self.db.transaction():
            if (
                await ledger.debit_credits(agent_id, amount, kind=PAYOUT_KIND, reference=payout_id, memo=to_address)
                is None
            ):
                raise ServiceError(
                    409, "insufficient_credits", f"The credits do not cover a payout of {usdc(amount)} USDC."
                )
            # After the debit, which locks the agent's row: a concurrent payout sees this one.
            left = await withdrawable(agent_id)
            if left < 0:
                raise ServiceError(
                    409,
                    "exceeds_earnings",
                    f"Only earnings from sales can be paid out: {usdc(left + amount)} USDC is withdrawable, not {usdc(amount)}.",
                    extra={"withdrawable_usdc": usdc(left + amount)},
                )
            now = now_ms()
            await Payout.insert(
                Payout(
                    id=payout_id,
                    agent_id=agent_id,
                    to_address=to_address,
                    amount=amount,
                    status="sending",
                    payment=msgspec.json.encode(payment).decode(),
                    settlement_tx=None,
                    reason=None,
                    created_ms=now,
                    updated_ms=now,
                )
            )
            if in_database:  # one transaction: paid, or (raising) nothing happened at all
                result = await self.backend.settle(decoded, requirements, self.account.address)
                if result.status != "settled":
                    raise ServiceError(
                        503,
                        "payout_failed",
                        f"The service's wallet could not pay {usdc(amount)} USDC: {result.reason}. Nothing was withdrawn.",
                    )
                await self._mark(payout_id, "paid", result.transaction, None)
        if not in_database:
            await self._conclude(
                payout_id,
                await self.backend.settle(decoded, requirements, self.account.address),
                decoded.authorization.valid_before,
            )
        return served(await self.get(payout_id))

    async def _mark(self, payout_id: str, status: str, tx: str | None, reason: str | None) -> bool:
        # One guarded update from `sending`: of two concurrent conclusions, one gives the credits back.
        moved = await (
            Payout.update(
                {Payout.status: status, Payout.settlement_tx: tx, Payout.reason: reason, Payout.updated_ms: now_ms()}
            )
            .where((Payout.id == payout_id) & (Payout.status == "sending"))
            .returning(Payout.agent_id, Payout.amount)
        )
        if moved and status == "failed":  # nothing moved: the credits come back
            row = moved[0]
            await ledger.credit_credits(
                row["agent_id"], int(row["amount"]), kind=RETURN_KIND, reference=payout_id, memo=reason
            )
        return bool(moved)

    async def _conclude(self, payout_id: str, result: Any, valid_before: int) -> None:
        """Record what the backend said. A refusal is final only once the authorization can
        never be used (the chain shows it cancelled, or unused past `valid_before`; without a chain
        reader, LATE_MARGIN_S past `valid_before`): until then the credits stay held."""
        final_refusal = result.status == "failed" and (
            result.reason in UNUSABLE or time.time() >= valid_before + LATE_MARGIN_S
        )
        if result.status == "pending" or (result.status == "failed" and not final_refusal):
            reason = (
                result.reason
                if result.status == "pending"
                else (
                    f"refused ({result.reason}); the credits stay held until the authorization is known unusable (it expires at {iso(valid_before * 1000)})"
                )
            )
            await Payout.update({Payout.reason: reason, Payout.updated_ms: now_ms()}).where(
                (Payout.id == payout_id) & (Payout.status == "sending")
            )
            return
        async with self.db.transaction():
            await self._mark(
                payout_id, "paid" if result.status == "settled" else "failed", result.transaction, result.reason
            )

    async def resolve_stale(self, older_than_s: float) -> int:
        """Ask the backend what became of payouts still `sending` after `older_than_s`."""
        rows = await Payout.select(Payout.id, Payout.to_address, Payout.payment).where(
            (Payout.status == "sending") & (Payout.created_ms < now_ms() - int(older_than_s * 1000))
        )
        for row in rows:
            decoded = x402.decode_payment(msgspec.json.decode(row["payment"]))
            requirements = msgspec.json.decode(row["payment"])["accepted"]
            fate = await self.backend.fate(decoded, requirements, decoded.authorization.from_)
            await self._conclude(row["id"], fate, decoded.authorization.valid_before)
        return len(rows)

    @staticmethod
    async def get(payout_id: str) -> dict[str, Any] | None:
        return await Payout.select().where(Payout.id == payout_id).first()

    @staticmethod
    async def of_agent(agent_id: str, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        rows = await (
            Payout.select()
            .where(Payout.agent_id == agent_id)
            .order_by(Payout.created_ms, ascending=False)
            .order_by(Payout.id, ascending=False)
            .limit(limit)
            .offset(offset)
        )
        return [served(r) for r in rows]


__all__ = [
    "EARNINGS_KINDS",
    "PAYOUT_KIND",
    "PAYOUT_TABLES",
    "Payout",
    "Payouts",
    "RETURN_KIND",
    "served",
    "withdrawable",
]
