"""Independent checks of an allocation answer, recomputed from the input block
and the returned solution alone (exact decimals, a relative tolerance of 1e-9
for the floats the answer carries). Imports nothing of the model.

Checks: solution_shape, known_pairs, item_quantities, option_capacity, budget,
min_share, max_share, required_pairs, totals_reported (and `objective`, added by
the tool from `objective` below).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .family import Check

REL = Decimal("1e-9")


def _d(x: Any) -> Decimal:
    if isinstance(x, bool) or x is None:
        raise TypeError("not a number")
    return Decimal(x) if isinstance(x, int) else Decimal(repr(float(x)))


def _tol(*scale: Decimal) -> Decimal:
    return REL * max([Decimal(1)] + [abs(s) for s in scale])


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _shape(solution: Any) -> str | None:
    if not isinstance(solution, dict):
        return "the solution is not an object"
    for key in ("assignments", "unassigned", "options"):
        if not isinstance(solution.get(key), list):
            return f"the solution has no `{key}` list"
    for a in solution["assignments"]:
        if (
            not isinstance(a, dict)
            or not isinstance(a.get("item"), str)
            or not isinstance(a.get("option"), str)
            or not _num(a.get("quantity"))
        ):
            return "an assignment lacks item, option or a numeric quantity"
    for u in solution["unassigned"]:
        if not isinstance(u, dict) or not isinstance(u.get("item"), str) or not _num(u.get("quantity")):
            return "an unassigned entry lacks item or a numeric quantity"
    if not _num(solution.get("total_quantity")):
        return "the solution has no numeric total_quantity"
    return None


def check(block: Any, solution: dict[str, Any]) -> list[Check]:
    problem = _shape(solution)
    if problem:
        return [Check("solution_shape", False, 1.0, problem)]
    out = [Check("solution_shape", True, 0.0, "the solution has the documented shape")]
    items = {it.id: _d(it.quantity) for it in block.items}
    options = {o.id: o for o in block.options}
    forbidden = {(r.item, r.option) for r in block.forbidden}
    pairs = {(p.item, p.option): p for p in block.pairs}
    full = block.objective == "minimise_cost" or block.assign_all

    bad = [
        f"{a['item']}/{a['option']}"
        for a in solution["assignments"]
        if (a["item"], a["option"]) not in pairs or (a["item"], a["option"]) in forbidden or a["quantity"] <= 0
    ]
    seen: set[tuple[str, str]] = set()
    for a in solution["assignments"]:
        key = (a["item"], a["option"])
        if key in seen:
            bad.append(f"{key} listed twice")
        seen.add(key)
    bad += [u["item"] for u in solution["unassigned"] if u["item"] not in items]
    out.append(
        Check(
            "known_pairs",
            not bad,
            float(len(bad)),
            f"not allowed or unknown: {bad[:5]}"
            if bad
            else "every assignment is an allowed pair with a positive quantity",
        )
    )
    if bad:
        return out

    # quantities: assigned + unassigned = quantity; assigned = quantity when every item must be; whole items to one option
    got: dict[str, Decimal] = {i: Decimal(0) for i in items}
    opts_of: dict[str, set[str]] = {i: set() for i in items}
    for a in solution["assignments"]:
        got[a["item"]] += _d(a["quantity"])
        opts_of[a["item"]].add(a["option"])
    left: dict[str, Decimal] = {i: Decimal(0) for i in items}
    for u in solution["unassigned"]:
        left[u["item"]] += _d(u["quantity"])
    worst = Decimal(0)
    why: list[str] = []
    for i, q in items.items():
        if got[i] + left[i] - q and abs(got[i] + left[i] - q) > _tol(q):
            worst = max(worst, abs(got[i] + left[i] - q))
            why.append(f"{i}: assigned + unassigned != quantity")
        if full and abs(got[i] - q) > _tol(q):
            worst = max(worst, abs(got[i] - q))
            why.append(f"{i}: not assigned in full")
        if got[i] - q > _tol(q):
            worst = max(worst, got[i] - q)
            why.append(f"{i}: assigned more than its quantity")
        if not block.split and (len(opts_of[i]) > 1 or (opts_of[i] and abs(got[i] - q) > _tol(q))):
            worst = max(worst, q)
            why.append(f"{i}: split although split is false")
    out.append(
        Check(
            "item_quantities",
            not why,
            float(worst),
            "; ".join(why[:5]) if why else "every item's quantity is accounted for",
        )
    )

    load: dict[str, Decimal] = {o: Decimal(0) for o in options}
    amount: dict[str, Decimal] = {o: Decimal(0) for o in options}
    cost = Decimal(0)
    for a in solution["assignments"]:
        p = pairs[(a["item"], a["option"])]
        q = _d(a["quantity"])
        load[a["option"]] += _d(p.use) * q
        amount[a["option"]] += q
        if p.cost is not None:
            cost += _d(p.cost) * q
    over = {
        o: load[o] - _d(options[o].capacity)
        for o in options
        if load[o] - _d(options[o].capacity) > _tol(_d(options[o].capacity))
    }
    out.append(
        Check(
            "option_capacity",
            not over,
            float(max(over.values(), default=0)),
            f"over capacity: {sorted(over)[:5]}" if over else "no option is over capacity",
        )
    )

    if block.max_total_cost is not None:
        excess = cost - _d(block.max_total_cost)
        ok = excess <= _tol(_d(block.max_total_cost))
        out.append(
            Check(
                "budget",
                ok,
                0.0 if ok else float(excess),
                f"total cost {cost} against max_total_cost {block.max_total_cost:g}",
            )
        )

    total = sum(amount.values(), Decimal(0))
    short = []
    worst = Decimal(0)
    for s in block.min_share:
        if s.if_used and amount[s.option] == 0:
            continue
        miss = _d(s.share) * total - amount[s.option]
        if miss > _tol(total):
            short.append(s.option)
            worst = max(worst, miss)
    if block.min_share:
        out.append(
            Check(
                "min_share",
                not short,
                float(worst),
                f"below min_share: {short[:5]}" if short else "every min_share floor holds",
            )
        )
    above = []
    worst = Decimal(0)
    for s in block.max_share:
        ex = amount[s.option] - _d(s.share) * total
        if ex > _tol(total):
            above.append(s.option)
            worst = max(worst, ex)
    if block.max_share:
        out.append(
            Check(
                "max_share",
                not above,
                float(worst),
                f"above max_share: {above[:5]}" if above else "every max_share cap holds",
            )
        )
    if block.required:
        missing = [
            f"{r.item}/{r.option}" for r in block.required if r.option not in opts_of[r.item] and items[r.item] > 0
        ]
        out.append(
            Check(
                "required_pairs",
                not missing,
                float(len(missing)),
                f"required pairs not used: {missing[:5]}" if missing else "every required pair is used",
            )
        )

    off = []
    if abs(_d(solution["total_quantity"]) - total) > _tol(total):
        off.append("total_quantity")
    for key, attr in (("total_cost", "cost"), ("total_value", "value")):
        rep = solution.get(key)
        if rep is not None:
            true = sum(
                (
                    _d(getattr(pairs[(a["item"], a["option"])], attr) or 0) * _d(a["quantity"])
                    for a in solution["assignments"]
                ),
                Decimal(0),
            )
            if not _num(rep) or abs(_d(rep) - true) > _tol(true):
                off.append(key)
    out.append(
        Check(
            "totals_reported",
            not off,
            float(len(off)),
            f"reported totals differ: {off}" if off else "reported totals equal the recomputed ones",
        )
    )
    return out


def objective(block: Any, solution: dict[str, Any]) -> float:
    """minimise_cost: total cost; maximise_value: total value (per-unit pair prices times quantities)."""
    pairs = {(p.item, p.option): p for p in block.pairs}
    attr = "cost" if block.objective == "minimise_cost" else "value"
    return float(
        sum(
            (
                _d(getattr(pairs[(a["item"], a["option"])], attr) or 0) * _d(a["quantity"])
                for a in solution["assignments"]
            ),
            Decimal(0),
        )
    )
