"""The ledger check: holds, charges, refunds, top-ups and receipts reconcile to
the balances, and nothing sits in an intermediate state longer than allowed.

`check_ledger()` returns a list of problems (empty when the books are right);
the concurrency and fault tests run it at their end and `tollway reconcile
--check` prints it for an operator.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
from piccolo.query.functions.aggregate import Sum

from tollway._core.auth.tables import Agent
from tollway._core.basics.ids import now_ms
from tollway._core.credits.payouts import EARNINGS_KINDS, Payout
from tollway._core.credits.tables import CreditHold, CreditTopUp, LedgerEntry, TopUpAttempt
from tollway._core.payments.tables import ChainBalance, PaymentAuthorization
from tollway._core.receipts.tables import Receipt
from tollway._core.storage import sql

INTERMEDIATE_PAYMENTS = ("reserved", "settling", "pending")
# Raw: an aggregate over a join of the watches' tables, whose classes this area may not import
# (credits never imports watches): what each watch says it spent, beside what its deliveries charged.
_WATCH_SPEND = (
    "SELECT w.id, w.spent, w.changes_delivered, COALESCE(SUM(d.charged), 0) AS charged, COUNT(d.id) AS delivered "
    "FROM tw_watches w LEFT JOIN tw_watch_deliveries d ON d.watch_id = w.id AND d.state = 'delivered' "
    "GROUP BY w.id, w.spent, w.changes_delivered"
)


async def check_ledger(*, max_intermediate_age_s: float | None = None) -> list[str]:
    problems: list[str] = []
    problems += await _balances_match_ledger()
    receipts = await Receipt.select(
        Receipt.receipt_id, Receipt.agent_id, Receipt.amount, Receipt.status, Receipt.job_id, Receipt.body
    )
    ledger = await LedgerEntry.select(LedgerEntry.account, LedgerEntry.delta, LedgerEntry.kind, LedgerEntry.reference)
    problems += _charges_have_receipts(
        receipts, ledger, await CreditHold.select(CreditHold.id, CreditHold.state, CreditHold.amount)
    )
    problems += _refunds_match(receipts, ledger)
    problems += await _top_ups_match(ledger)
    problems += await _watches_match()
    problems += _shares_match(receipts, ledger)
    problems += _outside_credits_match(receipts, ledger)
    problems += _outside_refunds_match(receipts, ledger)
    problems += await _payouts_match(ledger)
    if max_intermediate_age_s is not None:
        problems += await _nothing_stale(int(now_ms() - max_intermediate_age_s * 1000))
    return problems


async def _balances_match_ledger() -> list[str]:
    problems = []
    sums = {
        r["account"]: int(r["total"])
        for r in await LedgerEntry.select(LedgerEntry.account, Sum(LedgerEntry.delta, alias="total")).group_by(
            LedgerEntry.account
        )
    }
    for agent in await Agent.select(Agent.id, Agent.credits):
        credits = int(agent["credits"])
        if credits < 0:
            problems.append(f"agent {agent['id']} has a negative balance {credits}")
        if credits != sums.get(f"credits:{agent['id']}", 0):
            problems.append(
                f"agent {agent['id']} holds {credits} but its ledger sums to {sums.get('credits:' + agent['id'], 0)}"
            )
    for chain in await ChainBalance.select(ChainBalance.address, ChainBalance.balance):
        account = f"chain:{chain['address']}"
        if int(chain["balance"]) != sums.get(account, 0):
            problems.append(f"{account} holds {chain['balance']} but its ledger sums to {sums.get(account, 0)}")
    return problems


def _charges_have_receipts(receipts: list[dict[str, Any]], ledger: list[dict[str, Any]], holds: list[Any]) -> list[str]:
    """Every credits debit is a receipt's charge or a live hold; every credits receipt has one debit."""
    problems = []
    credit_receipts = {}
    for r in receipts:
        if msgspec.json.decode(r["body"]).get("payment_method") == "credits":
            credit_receipts[r["job_id"]] = r
    live_holds = {h["id"] for h in holds if h["state"] == "held"}
    spends = Counter(e["reference"] for e in ledger if e["kind"] == "spend")
    for request_id, n in spends.items():
        if n != 1:
            problems.append(f"request {request_id} was debited {n} times")
        if request_id not in credit_receipts and request_id not in live_holds:
            problems.append(f"request {request_id} was debited but has no receipt and no live hold")
    for request_id, receipt in credit_receipts.items():
        if spends.get(request_id, 0) != 1:
            problems.append(f"credits receipt {receipt['receipt_id']} has {spends.get(request_id, 0)} debits")
    for h in holds:
        if h["state"] != "held" and h["id"] not in credit_receipts:
            problems.append(f"hold {h['id']} ended {h['state']} without a receipt")
    return problems


def _refunds_match(receipts: list[dict[str, Any]], ledger: list[dict[str, Any]]) -> list[str]:
    problems = []
    refunds = Counter(e["reference"] for e in ledger if e["kind"] == "refund")
    by_id = {r["receipt_id"]: r for r in receipts}
    for receipt_id, n in refunds.items():
        receipt = by_id.get(receipt_id)
        if n != 1:
            problems.append(f"receipt {receipt_id} was refunded {n} times")
        if receipt is None or receipt["status"] != "refunded":
            problems.append(f"refund for {receipt_id} whose receipt is {receipt['status'] if receipt else 'missing'}")
    returned: Counter[str] = Counter()
    for e in ledger:
        if e["kind"] == "unspent_return":
            returned[e["reference"]] += int(e["delta"])
            receipt = by_id.get(e["reference"])
            if receipt is None or receipt["status"] != "settled":
                problems.append(
                    f"an unspent return for {e['reference']} whose receipt is {receipt['status'] if receipt else 'missing'}"
                )
    for receipt_id, total in returned.items():
        receipt = by_id.get(receipt_id)
        if receipt is not None and total > int(receipt["amount"]):
            problems.append(f"receipt {receipt_id} returned {total}, more than its {receipt['amount']}")
    for r in receipts:
        if r["status"] == "refunded" and refunds.get(r["receipt_id"], 0) != 1:
            problems.append(
                f"receipt {r['receipt_id']} says refunded but {refunds.get(r['receipt_id'], 0)} refunds were credited"
            )
    return problems


def _shares_match(receipts: list[dict[str, Any]], ledger: list[dict[str, Any]]) -> list[str]:
    """Each sale's share is paid once, out of a charge that stays settled, within its amount,
    with the seller's receipt beside it (core/credits/sales.py)."""
    problems = []
    by_id = {r["receipt_id"]: r for r in receipts}
    earned = Counter((r["job_id"], int(r["amount"])) for r in receipts if r["status"] == "earned")
    shares = Counter(e["reference"] for e in ledger if e["kind"] == "sale_share")
    for e in ledger:
        if e["kind"] != "sale_share":
            continue
        receipt = by_id.get(e["reference"])
        if shares[e["reference"]] != 1:
            problems.append(f"receipt {e['reference']} paid its seller {shares[e['reference']]} times")
        if receipt is None or receipt["status"] != "settled":
            problems.append(
                f"a seller's share of {e['reference']} whose receipt is {receipt['status'] if receipt else 'missing'}"
            )
        elif int(e["delta"]) > int(receipt["amount"]):
            problems.append(f"receipt {e['reference']} paid its seller {e['delta']}, more than its {receipt['amount']}")
        elif earned.get((receipt["job_id"], int(e["delta"])), 0) < 1:
            problems.append(f"the seller's share of {e['reference']} has no seller's receipt")
    return problems


def _outside_credits_match(receipts: list[dict[str, Any]], ledger: list[dict[str, Any]]) -> list[str]:
    """Credits bought with money paid outside the service are credited once per sale, to its
    buyer, within what the sale's receipt says was paid (core/credits/sales.py)."""
    problems = []
    by_id = {r["receipt_id"]: r for r in receipts}
    credited = Counter(e["reference"] for e in ledger if e["kind"] == "outside_sale_credit")
    for e in ledger:
        if e["kind"] != "outside_sale_credit":
            continue
        receipt = by_id.get(e["reference"])
        if credited[e["reference"]] != 1:
            problems.append(f"outside sale {e['reference']} was credited {credited[e['reference']]} times")
        if receipt is None:
            problems.append(f"credits of an outside sale {e['reference']} that has no receipt")
        elif e["account"] != f"credits:{receipt['agent_id']}" or int(e["delta"]) > int(receipt["amount"]):
            problems.append(
                f"outside sale {e['reference']} credited {e['delta']} to {e['account']}, not within its receipt"
            )
    return problems


def _outside_refunds_match(receipts: list[dict[str, Any]], ledger: list[dict[str, Any]]) -> list[str]:
    """Refunds of sales paid outside the service (core/credits/sales.py): credits and shares taken
    back within what the sale gave, refunds credited and refund receipts within what was paid."""
    problems = []
    moved: Counter[tuple[str, str, str]] = Counter()
    for e in ledger:
        moved[(e["kind"], e["account"], e["reference"] or "")] += int(e["delta"])
    for (kind, account, reference), total in moved.items():
        given = {"outside_sale_reversal": "outside_sale_credit", "sale_share_reversal": "sale_share"}.get(kind)
        if given is not None and -total > moved.get((given, account, reference), 0):
            problems.append(f"{kind} of {reference} took {-total} from {account}, more than the sale gave it")
    by_id = {r["receipt_id"]: r for r in receipts}
    for (kind, account, reference), total in moved.items():
        receipt = by_id.get(reference)
        if kind == "outside_refund_credit" and (
            receipt is None or account != f"credits:{receipt['agent_id']}" or total > int(receipt["amount"])
        ):
            problems.append(f"refunds credited {total} to {account} for {reference}, not within its receipt")
    paid = {r["job_id"]: int(r["amount"]) for r in receipts if r["status"] == "settled" and r["job_id"]}
    refunded: Counter[str] = Counter()
    for r in receipts:
        if r["status"] == "refund":
            refunded[r["job_id"]] += int(r["amount"])
    problems += [
        f"refunds of {job_id} add up to {total}, more than its {paid.get(job_id, 0)}"
        for job_id, total in refunded.items()
        if total > paid.get(job_id, 0)
    ]
    return problems


async def _payouts_match(ledger: list[dict[str, Any]]) -> list[str]:
    """Each payout debited its amount once, a failed one gave it back once, and no agent was paid
    out more than it earned from sales (core/credits/payouts.py)."""
    problems = []
    moved: dict[tuple[str, str], int] = Counter()
    for e in ledger:
        if e["kind"] in ("payout", "payout_return"):
            moved[(e["kind"], e["reference"])] += int(e["delta"])
    for p in await Payout.select(Payout.id, Payout.amount, Payout.status):
        amount = int(p["amount"])
        if moved.get(("payout", p["id"]), 0) != -amount:
            problems.append(f"payout {p['id']} of {amount} debited {-moved.get(('payout', p['id']), 0)}")
        returned = moved.get(("payout_return", p["id"]), 0)
        if returned != (amount if p["status"] == "failed" else 0):
            problems.append(f"payout {p['id']} is {p['status']} and gave back {returned}")
    # Only earnings leave: no agent withdrew more than its sales' shares credited it.
    earned: Counter[str] = Counter()
    for e in ledger:
        if e["kind"] in EARNINGS_KINDS:
            earned[e["account"]] += int(e["delta"])
    problems += [
        f"{account} paid out {-total} more than its sales earned" for account, total in earned.items() if total < 0
    ]
    return problems


async def _top_ups_match(ledger: list[dict[str, Any]]) -> list[str]:
    problems = []
    credited = Counter(e["reference"] for e in ledger if e["kind"] == "top_up")
    for row in await CreditTopUp.select(CreditTopUp.settlement_tx):
        if credited.get(row["settlement_tx"], 0) != 1:
            problems.append(f"top-up {row['settlement_tx']} was credited {credited.get(row['settlement_tx'], 0)} times")
    for tx, n in credited.items():
        if n != 1:
            problems.append(f"settlement {tx} credited {n} times")
    # settled top-up payments with no credited attempt (an attempt's id is its payment's)
    settled = await PaymentAuthorization.select(PaymentAuthorization.id).where(
        (PaymentAuthorization.purpose == "credits_top_up")
        & (PaymentAuthorization.status == "settled")
        & PaymentAuthorization.id.not_in(TopUpAttempt.select(TopUpAttempt.id).where(TopUpAttempt.status == "credited"))
    )
    problems += [f"top-up payment {r['id']} settled but was never credited" for r in settled]
    return problems


async def _watches_match() -> list[str]:
    """What each watch says it spent and delivered is what its delivered changes were charged."""
    problems = []
    rows = await sql.fetch(_WATCH_SPEND)
    for r in rows:
        if int(r["spent"]) != int(r["charged"]) or int(r["changes_delivered"]) != int(r["delivered"]):
            problems.append(
                f"watch {r['id']} says {r['spent']} spent over {r['changes_delivered']} changes; its deliveries say {r['charged']} over {r['delivered']}"
            )
    return problems


async def _nothing_stale(cutoff_ms: int) -> list[str]:
    problems = []
    for r in await CreditHold.select(CreditHold.id).where(
        (CreditHold.state == "held") & (CreditHold.created_ms < cutoff_ms)
    ):
        problems.append(f"hold {r['id']} is still held")
    Auth = PaymentAuthorization
    for r in await Auth.select(Auth.id, Auth.status).where(
        Auth.status.is_in(list(INTERMEDIATE_PAYMENTS)) & (Auth.created_ms < cutoff_ms)
    ):
        problems.append(f"payment {r['id']} is still {r['status']}")
    for r in await Receipt.select(Receipt.receipt_id, Receipt.status).where(
        Receipt.status.is_in(["pending", "refund_due"]) & (Receipt.created_ms < cutoff_ms)
    ):
        problems.append(f"receipt {r['receipt_id']} is still {r['status']}")
    for r in await TopUpAttempt.select(TopUpAttempt.id).where(
        (TopUpAttempt.status == "pending") & (TopUpAttempt.created_ms < cutoff_ms)
    ):
        problems.append(f"top-up {r['id']} is still pending")
    for r in await Payout.select(Payout.id).where((Payout.status == "sending") & (Payout.created_ms < cutoff_ms)):
        problems.append(f"payout {r['id']} is still sending")
    return problems
