"""Independent checks of a packing answer: recomputed from the input block and
the returned solution alone, in exact decimals. Imports nothing of the model.

Checks: solution_shape, known_ids, bin_availability, every_item_packed,
bin_capacity, incompatible_pairs, used_reported (and `objective`, added by the
tool from `objective` below).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .family import Check

USED_TOLERANCE = Decimal("1e-9")


def _d(x: Any) -> Decimal:
    if isinstance(x, bool):
        raise TypeError("boolean is not a number")
    return Decimal(x) if isinstance(x, int) else Decimal(repr(float(x)))


def _shape(block: Any, solution: Any) -> str | None:
    if not isinstance(solution, dict) or not isinstance(solution.get("bins"), list):
        return "the solution has no `bins` list"
    for b in solution["bins"]:
        if not isinstance(b, dict) or not isinstance(b.get("bin"), str) or not isinstance(b.get("index"), int):
            return "a bin entry lacks `bin` or `index`"
        if not isinstance(b.get("items"), list) or not isinstance(b.get("used"), dict):
            return "a bin entry lacks `items` or `used`"
        for it in b["items"]:
            if (
                not isinstance(it, dict)
                or not isinstance(it.get("id"), str)
                or not isinstance(it.get("count"), int)
                or isinstance(it.get("count"), bool)
            ):
                return "an item entry lacks `id` or an integer `count`"
    if block.variant == "knapsack":
        if not isinstance(solution.get("left_out"), list):
            return "a knapsack solution needs `left_out`"
        for it in solution["left_out"]:
            if not isinstance(it, dict) or not isinstance(it.get("id"), str) or not isinstance(it.get("count"), int):
                return "a left_out entry lacks `id` or an integer `count`"
    return None


def check(block: Any, solution: dict[str, Any]) -> list[Check]:
    problem = _shape(block, solution)
    if problem:
        return [Check("solution_shape", False, 1.0, problem)]
    items = {it.id: it for it in block.items}
    bins = {b.id: b for b in block.bins}
    checks = [Check("solution_shape", True, 0.0, "the solution has the documented shape")]

    unknown = [it["id"] for b in solution["bins"] for it in b["items"] if it["id"] not in items]
    unknown += [b["bin"] for b in solution["bins"] if b["bin"] not in bins]
    unknown += [it["id"] for it in solution.get("left_out", []) if it["id"] not in items]
    nonpositive = [it["id"] for b in solution["bins"] for it in b["items"] if it["count"] <= 0]
    nonpositive += [it["id"] for it in solution.get("left_out", []) if it["count"] <= 0]
    checks.append(
        Check(
            "known_ids",
            not unknown and not nonpositive,
            float(len(unknown) + len(nonpositive)),
            f"unknown ids {unknown[:5]}, non-positive counts for {nonpositive[:5]}"
            if unknown or nonpositive
            else "every id is in the input and every count positive",
        )
    )
    if unknown:
        return checks

    # bins: real ones, each (bin, index) at most once, index below the quantity; knapsack: one bin
    seen: set[tuple[str, int]] = set()
    bad: list[str] = []
    worst = 0.0
    for b in solution["bins"]:
        key = (b["bin"], b["index"])
        q = bins[b["bin"]].quantity
        if key in seen:
            bad.append(f"{key} used twice")
        if not 0 <= b["index"] < q:
            bad.append(f"{b['bin']} index {b['index']} outside 0..{q - 1}")
            worst = max(worst, float(b["index"] - q + 1) if b["index"] >= q else float(-b["index"]))
        seen.add(key)
    if block.variant == "knapsack" and len(solution["bins"]) > 1:
        bad.append("a knapsack has one bin")
    checks.append(
        Check(
            "bin_availability",
            not bad,
            max(worst, 1.0) if bad else 0.0,
            "; ".join(bad[:5]) if bad else "every bin used exists and is used once",
        )
    )

    # every item packed (bin) / packed plus left out equals the quantity (knapsack)
    packed: dict[str, int] = {}
    for b in solution["bins"]:
        for it in b["items"]:
            packed[it["id"]] = packed.get(it["id"], 0) + it["count"]
    left = {}
    for it in solution.get("left_out", []):
        left[it["id"]] = left.get(it["id"], 0) + it["count"]
    diffs = {i: packed.get(i, 0) + left.get(i, 0) - items[i].quantity for i in items}
    off = {i: d for i, d in diffs.items() if d}
    checks.append(
        Check(
            "every_item_packed",
            not off,
            float(max((abs(d) for d in off.values()), default=0)),
            f"counts differ from quantities for {sorted(off)[:5]}"
            if off
            else (
                "every unit of every item is packed" if block.variant == "bin" else "every unit is packed or left out"
            ),
        )
    )

    # capacity per dimension, in exact decimals
    worst_cap = Decimal(0)
    over: list[str] = []
    reported_off = Decimal(0)
    for b in solution["bins"]:
        cap = bins[b["bin"]].capacity
        for d in block.dimensions:
            load = sum((_d(items[it["id"]].size.get(d, 0)) * it["count"] for it in b["items"]), Decimal(0))
            excess = load - _d(cap[d])
            if excess > 0:
                over.append(f"{b['bin']}#{b['index']} {d}")
                worst_cap = max(worst_cap, excess)
            rep = b["used"].get(d)
            if not isinstance(rep, (int, float)) or isinstance(rep, bool):
                reported_off = max(reported_off, Decimal(1) + load)
            else:
                diff = abs(_d(rep) - load)
                if diff > USED_TOLERANCE * max(Decimal(1), load):
                    reported_off = max(reported_off, diff)
    checks.append(
        Check(
            "bin_capacity",
            not over,
            float(worst_cap),
            f"over capacity: {over[:5]}" if over else "no bin is over capacity in any dimension",
        )
    )

    clash = []
    for b in solution["bins"]:
        ids = {it["id"] for it in b["items"]}
        clash += [f"{x}+{y} in {b['bin']}#{b['index']}" for x, y in block.incompatible if x in ids and y in ids]
    checks.append(
        Check(
            "incompatible_pairs",
            not clash,
            float(len(clash)),
            f"incompatible items share a bin: {clash[:5]}" if clash else "no incompatible items share a bin",
        )
    )
    checks.append(
        Check(
            "used_reported",
            reported_off == 0,
            float(reported_off),
            "reported `used` differs from the recomputed load"
            if reported_off
            else "reported `used` equals the recomputed load",
        )
    )
    return checks


def objective(block: Any, solution: dict[str, Any]) -> float:
    """bin: the number of bins used; knapsack: the total value packed."""
    if block.variant == "bin":
        return float(len(solution["bins"]))
    items = {it.id: it for it in block.items}
    return float(
        sum((_d(items[it["id"]].value or 0) * it["count"] for b in solution["bins"] for it in b["items"]), Decimal(0))
    )
