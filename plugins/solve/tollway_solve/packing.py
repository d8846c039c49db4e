"""Packing: `bin` (minimise the bins used) and `knapsack` (maximise the value
packed into one bin), over several dimensions, with item and bin quantities up
to 1,000,000 and incompatible pairs. No geometric placement.

Items are aggregated, never expanded one by one: identical input kinds (same
sizes and value, in no incompatible pair) become one model kind, and the model
counts how many units of each kind go into each bin (or, for one dimension, an
arc-flow model: packing_flow.py). A greedy first-fit-decreasing packing over
groups of identical bins is the answer whenever the search finds nothing
better, and gives the hint and the upper bound; the Martello–Toth L2 bound on
each dimension gives the lower bound. CP-SAT proves the optimum or stops at the
time limit; the status comes from family.status_of.

The checks live in packing_check.py, written apart from this model.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from typing import Annotated, Any, Literal

import msgspec
from ortools.sat.python import cp_model

from . import packing_check, packing_colgen, packing_flow, packing_lns, packing_relax, packing_tabu
from .bounds import LIST_MAX, Amount, Id, mapping, shown
from .bounds import items as bounded
from .family import ENGINE, Conflict, ConflictConstraint, InputProblem, Outcome, cpsat_status, status_of
from .numbers import INT_SAFE, check_number, scale_for, scaled, unscale

name = "packing"
VERSION = f"packing-4/{ENGINE}"  # bump the revision when a change can alter answers
MAX_QUANTITY = 1_000_000
MAX_VARIABLES = 100_000
GREEDY_WORK = 3_000_000  # item kinds x bin groups the greedy packing may scan
# of the time left after minimum bin slack, for the tabu search (one dimension), without and with
# the arc-flow model to follow (it proves the small capacities, the search rarely closes them)
TABU_SHARE = (0.08, 0.05)
# of column generation's time for its bound (the rest for the integer master), without and with the
# arc-flow model to follow: without it the tabu search takes the time the integer master leaves
BOUND_SHARE = (0.85, 0.5)


MAX_DIMENSIONS = 50
Quantity = Annotated[int, shown(minimum=0, maximum=MAX_QUANTITY)]  # negative_value, quantity_too_large


class Bin(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    capacity: mapping(Amount, most=MAX_DIMENSIONS)  # type: ignore[valid-type]
    quantity: Quantity = 1


class Item(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    size: mapping(Amount, most=MAX_DIMENSIONS)  # type: ignore[valid-type]
    quantity: Quantity = 1
    value: Amount | None = None  # knapsack: the value of one unit (nonnegative)


class PackingBlock(msgspec.Struct, forbid_unknown_fields=True):
    """`variant` bin minimises bins; knapsack maximises the value packed in its one bin."""

    variant: Literal["bin", "knapsack"]
    dimensions: bounded(Id, most=MAX_DIMENSIONS, least=1, enforce=True)  # type: ignore[valid-type]
    bins: bounded(Bin, most=LIST_MAX, least=1, enforce=True)  # type: ignore[valid-type]
    items: bounded(Item, most=LIST_MAX, least=1, enforce=True)  # type: ignore[valid-type]
    incompatible: bounded(tuple[Id, Id], most=LIST_MAX, enforce=True) = []  # type: ignore[valid-type]


block_type = PackingBlock


# -- validation -------------------------------------------------------------------
def _ids(entries: list[Any], field: str) -> None:
    seen: set[str] = set()
    for i, e in enumerate(entries):
        if not e.id.strip():
            raise InputProblem("empty_id", "ids must not be empty", f"{field}[{i}].id")
        if e.id in seen:
            raise InputProblem("duplicate_id", f"id {e.id!r} appears twice", f"{field}[{i}].id")
        seen.add(e.id)


def validate(block: PackingBlock) -> None:
    if not block.dimensions:
        raise InputProblem("empty_list", "at least one dimension is needed", "packing.dimensions")
    dims: set[str] = set()
    for i, d in enumerate(block.dimensions):
        if not d.strip():
            raise InputProblem("empty_id", "dimension names must not be empty", f"packing.dimensions[{i}]")
        if d in dims:
            raise InputProblem("duplicate_id", f"dimension {d!r} appears twice", f"packing.dimensions[{i}]")
        dims.add(d)
    for field, entries in (("packing.bins", block.bins), ("packing.items", block.items)):
        if not entries:
            raise InputProblem("empty_list", "at least one entry is needed", field)
        _ids(entries, field)
    for i, b in enumerate(block.bins):
        _quantity(b.quantity, f"packing.bins[{i}].quantity")
        for d, v in b.capacity.items():
            if d not in dims:
                raise InputProblem(
                    "unknown_dimension", f"{d!r} is not one of the dimensions", f"packing.bins[{i}].capacity.{d}"
                )
            check_number(v, f"packing.bins[{i}].capacity.{d}")
        for d in block.dimensions:
            if d not in b.capacity:
                raise InputProblem(
                    "missing_capacity",
                    f"bin {b.id!r} has no capacity for dimension {d!r}",
                    f"packing.bins[{i}].capacity",
                )
    for i, it in enumerate(block.items):
        _quantity(it.quantity, f"packing.items[{i}].quantity")
        for d, v in it.size.items():
            if d not in dims:
                raise InputProblem(
                    "unknown_dimension", f"{d!r} is not one of the dimensions", f"packing.items[{i}].size.{d}"
                )
            check_number(v, f"packing.items[{i}].size.{d}")
        if block.variant == "knapsack":
            if it.value is None:
                raise InputProblem(
                    "missing_value", f"knapsack item {it.id!r} needs a value", f"packing.items[{i}].value"
                )
            check_number(it.value, f"packing.items[{i}].value")
    if block.variant == "knapsack" and (len(block.bins) != 1 or block.bins[0].quantity != 1):
        raise InputProblem(
            "knapsack_one_bin", "a knapsack uses exactly one bin (one entry with quantity 1)", "packing.bins"
        )
    item_ids = {it.id for it in block.items}
    for i, (a, b) in enumerate(block.incompatible):
        for j, ref in enumerate((a, b)):
            if ref not in item_ids:
                raise InputProblem("unknown_id", f"{ref!r} is not an item id", f"packing.incompatible[{i}][{j}]")
        if a == b:
            raise InputProblem(
                "contradictory_input", f"item {a!r} cannot be incompatible with itself", f"packing.incompatible[{i}]"
            )
    # scaled integers must keep every sum CP-SAT builds inside 64 bits
    data = _Data.of(block)
    for d, dim in enumerate(block.dimensions):
        top = max([c[d] for c in data.caps] + [s[d] * k.quantity for s, k in zip(data.sizes, block.items)])
        if top * (len(block.items) + 1) >= INT_SAFE:
            raise InputProblem(
                "unsupported_precision",
                f"the sizes of dimension {dim!r} need more precision than can be solved exactly",
                "packing",
            )
    if data.values and sum(v * it.quantity for v, it in zip(data.values, block.items)) >= INT_SAFE:
        raise InputProblem(
            "unsupported_precision", "the values need more precision than can be solved exactly", "packing.items"
        )


def _quantity(q: int, field: str) -> None:
    if q < 0:
        raise InputProblem("negative_value", "must not be negative", field)
    if q > MAX_QUANTITY:
        raise InputProblem("quantity_too_large", f"packing quantities are at most {MAX_QUANTITY}", field)


# -- data: exact integers ------------------------------------------------------------
@dataclasses.dataclass
class _Data:
    scales: list[int]  # per dimension
    caps: list[list[int]]  # per bin type
    sizes: list[list[int]]  # per input item
    value_scale: int
    values: list[int]  # per input item (knapsack)

    @classmethod
    def of(cls, block: PackingBlock) -> _Data:
        scales = []
        for d in block.dimensions:
            scales.append(
                scale_for([b.capacity.get(d, 0) for b in block.bins] + [it.size.get(d, 0) for it in block.items])
            )
        caps = [[scaled(b.capacity.get(d, 0), s) for d, s in zip(block.dimensions, scales)] for b in block.bins]
        sizes = [[scaled(it.size.get(d, 0), s) for d, s in zip(block.dimensions, scales)] for it in block.items]
        vs = scale_for([it.value or 0 for it in block.items]) if block.variant == "knapsack" else 0
        values = [scaled(it.value or 0, vs) for it in block.items] if block.variant == "knapsack" else []
        return cls(scales, caps, sizes, vs, values)


@dataclasses.dataclass
class _Kind:
    """A model kind: identical input items merged."""

    size: list[int]
    value: int
    members: list[int]  # input item indexes
    quantity: int


def _kinds(block: PackingBlock, data: _Data) -> list[_Kind]:
    incompatible = {x for pair in block.incompatible for x in pair}
    kinds: list[_Kind] = []
    index: dict[tuple, _Kind] = {}
    for i, it in enumerate(block.items):
        if it.quantity == 0:
            continue
        v = data.values[i] if data.values else 0
        key = (tuple(data.sizes[i]), v)
        if it.id not in incompatible and key in index:
            k = index[key]
            k.members.append(i)
            k.quantity += it.quantity
            continue
        k = _Kind(list(data.sizes[i]), v, [i], it.quantity)
        kinds.append(k)
        if it.id not in incompatible:
            index[key] = k
    return kinds


def _fit(rem: list[int], size: list[int], cap: int) -> int:
    """How many units of `size` fit in `rem` (at most `cap`)."""
    f = cap
    for r, s in zip(rem, size):
        if s > 0:
            f = min(f, r // s)
    return max(f, 0)


@dataclasses.dataclass
class _Group:
    """`n` identical bins of type `t` with the same remaining room and contents."""

    t: int
    n: int
    rem: list[int]
    load: dict[int, int]


def _greedy_best(
    kinds: list[_Kind], caps: list[list[int]], quantities: list[int], clash: dict[int, set[int]], max_groups: int
) -> list[_Group] | None:
    """First fit decreasing by the largest relative size, then (with several dimensions) by
    the relative sizes' sum: the packing with fewer bins."""
    top = [max(1, max(c[d] for c in caps)) for d in range(len(caps[0]))]
    largest = [max((s / t for s, t in zip(k.size, top)), default=0) for k in kinds]
    best = _greedy(kinds, caps, quantities, clash, max_groups, sorted(range(len(kinds)), key=lambda k: -largest[k]))
    if len(top) > 1:
        total = [sum(s / t for s, t in zip(k.size, top)) for k in kinds]
        other = _greedy(
            kinds,
            caps,
            quantities,
            clash,
            max_groups,
            sorted(range(len(kinds)), key=lambda k: (-total[k], -largest[k])),
        )
        if other is not None and (best is None or sum(g.n for g in other) < sum(g.n for g in best)):
            best = other
    return best


def _greedy(
    kinds: list[_Kind],
    caps: list[list[int]],
    quantities: list[int],
    clash: dict[int, set[int]],
    max_groups: int,
    order: list[int],
) -> list[_Group] | None:
    """First fit over groups of identical bins, kinds taken in `order`; None if the bins
    run out or more than `max_groups` groups would be needed."""
    types = sorted(
        range(len(caps)), key=lambda t: -sum(caps[t][d] / max(1, max(c[d] for c in caps)) for d in range(len(caps[t])))
    )
    groups: list[_Group] = []
    opened = [0] * len(caps)
    for k in order:
        kind = kinds[k]
        left = kind.quantity
        gi = 0
        while left > 0 and gi < len(groups):
            g = groups[gi]
            gi += 1
            if clash.get(k) and any(o in g.load for o in clash[k]):
                continue
            f = _fit(g.rem, kind.size, left)
            if f == 0:
                continue
            full, part = divmod(left, f)
            if full >= g.n:
                _add(g, k, f, kind.size)
                left -= f * g.n
                continue
            # split the group: `full` bins take f, one takes `part`, the rest stay
            rest = g.n - full
            taken = _Group(g.t, full, list(g.rem), dict(g.load))
            _add(taken, k, f, kind.size)
            new = [taken] if full else []
            if part:
                one = _Group(g.t, 1, list(g.rem), dict(g.load))
                _add(one, k, part, kind.size)
                new.append(one)
                rest -= 1
            if rest:
                new.append(_Group(g.t, rest, list(g.rem), dict(g.load)))
            gi -= 1
            groups[gi : gi + 1] = new
            left = 0
        while left > 0:
            for t in types:
                f = _fit(caps[t], kind.size, left)
                if f > 0 and opened[t] < quantities[t]:
                    break
            else:
                return None
            need = min(-(-left // f), quantities[t] - opened[t])
            full, part = divmod(min(left, need * f), f)
            if full:
                g = _Group(t, full, list(caps[t]), {})
                _add(g, k, f, kind.size)
                groups.append(g)
            if part:
                g = _Group(t, 1, list(caps[t]), {})
                _add(g, k, part, kind.size)
                groups.append(g)
            opened[t] += full + (1 if part else 0)
            left -= full * f + part
            if len(groups) > max_groups:
                return None
    return groups


def _add(g: _Group, k: int, count: int, size: list[int]) -> None:
    g.load[k] = g.load.get(k, 0) + count
    g.rem = [r - count * s for r, s in zip(g.rem, size)]


@dataclasses.dataclass
class _Plan:
    data: _Data
    kinds: list[_Kind]
    clash: dict[int, set[int]]
    greedy: list[_Group] | None
    slots: list[int]  # bins of each type the model may open
    lb: int = 0  # the lower bound on the bins (L2 on each dimension)
    flow: packing_flow.Graph | None = None  # the arc-flow graph when the one-dimensional model applies
    flow_dim: int = 0
    one_dim: int | None = None  # the capacity when one dimension carries every size (flow_dim)

    @property
    def greedy_bins(self) -> int | None:
        return None if self.greedy is None else sum(g.n for g in self.greedy)

    @property
    def per_bin_variables(self) -> int:
        return sum(self.slots) * (len(self.kinds) + 1)


@dataclasses.dataclass(frozen=True)
class _Keyed:
    """A block with its encoding, which alone is compared and hashed."""

    key: bytes
    block: PackingBlock = dataclasses.field(compare=False, hash=False)


@functools.lru_cache(maxsize=1)  # validation, pricing and solving share one plan
def _plan_of(keyed: _Keyed) -> _Plan:
    return _make_plan(keyed.block)


def _plan(block: PackingBlock) -> _Plan:
    return _plan_of(_Keyed(msgspec.msgpack.encode(block), block))


def _make_plan(block: PackingBlock) -> _Plan:
    data = _Data.of(block)
    kinds = _kinds(block, data)
    by_id = {it.id: i for i, it in enumerate(block.items)}
    kind_of = {m: k for k, kind in enumerate(kinds) for m in kind.members}
    clash: dict[int, set[int]] = {}
    for a, b in block.incompatible:
        ka, kb = kind_of.get(by_id[a]), kind_of.get(by_id[b])
        if ka is not None and kb is not None:
            clash.setdefault(ka, set()).add(kb)
            clash.setdefault(kb, set()).add(ka)
    quantities = [b.quantity for b in block.bins]
    if block.variant == "knapsack":
        return _Plan(data, kinds, clash, None, [1])
    total_units = sum(k.quantity for k in kinds)
    greedy = _greedy_best(kinds, data.caps, quantities, clash, max(100, GREEDY_WORK // max(1, len(kinds))))
    if greedy is None:
        slots = [min(q, total_units) for q in quantities]
    else:
        used = sum(g.n for g in greedy)
        slots = [min(q, used) for q in quantities]
    plan = _Plan(data, kinds, clash, greedy, slots)
    plan.lb = _lower_bound(plan)
    _flow_graph(block, plan)
    return plan


def _flow_graph(block: PackingBlock, plan: _Plan) -> None:
    """The arc-flow model applies when one dimension carries every size, every available bin
    has the same capacity in it, and no incompatible pair remains among the kinds."""
    dims = {d for k in plan.kinds for d, s in enumerate(k.size) if s > 0}
    caps = {plan.data.caps[t][d] for t, b in enumerate(block.bins) for d in dims if b.quantity > 0}
    if len(dims) != 1 or len(caps) != 1 or plan.clash or plan.greedy_bins == plan.lb:
        return
    d, cap = dims.pop(), caps.pop()
    plan.one_dim, plan.flow_dim = cap, d
    plan.flow = packing_flow.graph(cap, [(k.size[d], k.quantity) for k in plan.kinds], MAX_VARIABLES - 1)


def estimate_variables(block: PackingBlock) -> int:
    """The variable estimate: bins x (item kinds + 1) for bin, item kinds for knapsack;
    `bins` counts the bins the model may open (see docs/solve.md)."""
    if block.variant == "knapsack":
        return len(block.items)
    plan = _plan(block)
    if plan.flow is not None:
        return plan.flow.size
    if plan.per_bin_variables <= MAX_VARIABLES or plan.greedy is None:
        return plan.per_bin_variables
    return len(plan.kinds)  # no model fits: the greedy packing is the answer


def size(block: PackingBlock) -> dict[str, int]:
    return {
        "item_kinds": len(block.items),
        "items": sum(it.quantity for it in block.items),
        "bin_kinds": len(block.bins),
        "bins_available": sum(b.quantity for b in block.bins),
        "dimensions": len(block.dimensions),
    }


def price_units(block: PackingBlock) -> int:
    """Item kinds x bins x dimensions (bins as in the estimate)."""
    bins = 1 if block.variant == "knapsack" else sum(_plan(block).slots)
    return len(block.items) * max(1, bins) * len(block.dimensions)


# -- solving ---------------------------------------------------------------------------
def _num_workers() -> int:
    return max(2, min(8, os.cpu_count() or 2))


def _lower_bound(plan: _Plan) -> int:
    """The L2 bound on each dimension (every bin given the largest capacity), the largest."""
    lb = 1 if plan.kinds else 0
    caps = plan.data.caps
    for d in range(len(plan.data.scales)):
        biggest = max(c[d] for c in caps)
        if any(k.size[d] > biggest for k in plan.kinds):
            continue  # an item fits no bin: the infeasibility is reported instead
        lb = max(lb, packing_relax.l2_bound(biggest, [(k.size[d], k.quantity) for k in plan.kinds]))
    return lb


def _oversize(block: PackingBlock, plan: _Plan) -> list[Conflict]:
    out = []
    for kind in plan.kinds:
        if all(_fit(c, kind.size, 1) == 0 or q == 0 for c, q in zip(plan.data.caps, [b.quantity for b in block.bins])):
            for m in kind.members:
                it = block.items[m]
                cons = [ConflictConstraint("item_size", it.id, f"size of item {it.id!r}")]
                cons += [
                    ConflictConstraint("bin_capacity", b.id, f"capacity of bin {b.id!r} (quantity {b.quantity})")
                    for b in block.bins
                ]
                out.append(Conflict(cons, f"item {it.id!r} fits in no available bin in every dimension at once"))
    return out


def _bins_out(block: PackingBlock, plan: _Plan, contents: list[tuple[int, dict[int, int]]]) -> list[dict[str, Any]]:
    """Model kinds per opened bin -> input ids, spreading each kind over its members."""
    left = {m: block.items[m].quantity for kind in plan.kinds for m in kind.members}
    out = []
    per_type: dict[int, int] = {}
    for t, load in contents:
        counts: dict[int, int] = {}
        for k, c in load.items():
            for m in plan.kinds[k].members:
                if c == 0:
                    break
                take = min(c, left[m])
                if take:
                    counts[m] = counts.get(m, 0) + take
                    left[m] -= take
                    c -= take
        if not counts:
            continue
        used = []
        for d, s in enumerate(plan.data.scales):
            used.append(unscale(sum(plan.data.sizes[m][d] * c for m, c in counts.items()), s))
        index = per_type.get(t, 0)
        per_type[t] = index + 1
        out.append(
            {
                "bin": block.bins[t].id,
                "index": index,
                "items": [{"id": block.items[m].id, "count": c} for m, c in sorted(counts.items())],
                "used": dict(zip(block.dimensions, used)),
            }
        )
    return out


def solve(block: PackingBlock, time_limit_s: float) -> Outcome:
    started = time.monotonic()
    plan = _plan(block)
    if block.variant == "knapsack":
        return _solve_knapsack(block, plan, time_limit_s, started)
    if not plan.kinds:
        return Outcome("optimal", 0.0, 0.0, 0.0, {"bins": []}, variables_built=0)
    conflicts = _oversize(block, plan)
    if conflicts:
        return Outcome("infeasible", None, None, None, None, conflicts=conflicts, conflicts_complete=False)
    lb = plan.lb
    best = None if plan.greedy is None else [(g.t, g.load) for g in plan.greedy for _ in range(g.n)]
    if best is not None and len(best) <= lb:  # the greedy packing meets the bound: proven
        return _answer(block, plan, best, lb, proven=True, out_of_time=False, nvars=0)
    left = time_limit_s - (time.monotonic() - started)
    if plan.one_dim is not None:
        start = _min_slack(block, plan, 0.2 * left)
        if start is not None and (best is None or len(start) <= len(best)):
            best = start  # on a tie too: the tabu search does better from its fuller bins
            if len(best) <= lb:
                return _answer(block, plan, best, lb, proven=True, out_of_time=False, nvars=0)
        if best is not None:  # fewer bins by the tabu search, for a share of the time
            share = TABU_SHARE[plan.flow is not None] * (time_limit_s - (time.monotonic() - started))
            best = _tabu(block, plan, best, lb, share)
            if len(best) <= lb:
                return _answer(block, plan, best, lb, proven=True, out_of_time=False, nvars=0)
        # column generation first (half the time when the arc-flow model can follow)
        left = time_limit_s - (time.monotonic() - started)
        share = 0.5 * left if plan.flow is not None else left
        code, found, bound, nvars = _solve_columns(block, plan, share, best)
        if found is not None and (best is None or len(found) < len(best)):
            best = found
        lb = max(lb, bound)
        if best is not None and len(best) <= lb:
            return _answer(block, plan, best, lb, proven=True, out_of_time=False, nvars=nvars)
        left = time_limit_s - (time.monotonic() - started)
    if plan.flow is not None:
        code, found, bound, nvars = _solve_flow(block, plan, left, best, lb)
    elif plan.one_dim is not None:
        if best is not None and left > 0.5:  # the integer master ended early: the rest of the time
            best = _tabu(block, plan, best, max(lb, bound), left - 0.2)  # to the tabu search
    elif plan.per_bin_variables <= MAX_VARIABLES or best is None:
        code, found, bound, nvars = _solve_bins(plan, left)
    else:  # no exact model fits the variable limit: the greedy packing, improved a few bins at a time
        better, ran_out = packing_lns.improve(
            best, [k.size for k in plan.kinds], plan.data.caps, plan.clash, lb, left, 1
        )
        return _answer(block, plan, better, lb, proven=False, out_of_time=ran_out, nvars=0)
    if code == cp_model.MODEL_INVALID:
        raise RuntimeError("the packing model is invalid")
    if code == cp_model.INFEASIBLE and best is None:
        return Outcome("infeasible", None, None, None, None, conflicts=_count_conflict(block), variables_built=nvars)
    if found is not None and (best is None or len(found) < len(best)):
        best = found
    if best is None:  # the time ran out before any packing was found
        return Outcome(
            status_of(proven=False, found=False, out_of_time=True), None, float(lb), None, None, variables_built=nvars
        )
    bound = max(lb, bound)
    proven = code == cp_model.OPTIMAL or len(best) <= bound
    return _answer(block, plan, best, bound, proven=proven, out_of_time=not proven, nvars=nvars)


def _answer(
    block: PackingBlock,
    plan: _Plan,
    contents: list[tuple[int, dict[int, int]]],
    bound: int,
    *,
    proven: bool,
    out_of_time: bool,
    nvars: int,
) -> Outcome:
    sol = {"bins": _bins_out(block, plan, contents)}
    value = float(len(sol["bins"]))
    status = status_of(proven=proven or value <= bound, found=True, out_of_time=out_of_time)
    if status == "optimal":
        return Outcome(status, value, value, 0.0, sol, variables_built=nvars)
    return Outcome(status, value, float(bound), (value - bound) / max(1.0, value), sol, variables_built=nvars)


Contents = list[tuple[int, dict[int, int]]]  # (bin type, kind -> count) per opened bin


def _one_dim(plan: _Plan) -> list[tuple[int, int]]:
    """The kinds as (size, units) in the one dimension; weightless units join a bin at the end."""
    d = plan.flow_dim
    return [(k.size[d], k.quantity if k.size[d] else 0) for k in plan.kinds]


def _loads(plan: _Plan, best: Contents | None) -> list[dict[int, int]] | None:
    """A packing's bins without their weightless units."""
    kinds = _one_dim(plan)
    return None if best is None else [{k: c for k, c in load.items() if kinds[k][1]} for _, load in best]


def _typed(block: PackingBlock, plan: _Plan, loads: list[dict[int, int]]) -> Contents:
    """One-dimensional bins typed in entry order, the weightless units in the first."""
    weightless = {k: kind.quantity for k, kind in enumerate(plan.kinds) if kind.size[plan.flow_dim] == 0}
    if weightless and loads:
        loads = [{**loads[0], **weightless}, *loads[1:]]
    types = [t for t, b in enumerate(block.bins) for _ in range(min(b.quantity, len(loads)))]
    return list(zip(types, loads))


def _min_slack(block: PackingBlock, plan: _Plan, time_limit_s: float) -> Contents | None:
    """The minimum-bin-slack packing when it fits the bins available."""
    assert plan.one_dim is not None
    loads = packing_colgen.min_slack(plan.one_dim, _one_dim(plan), time_limit_s)
    if loads is None or len(loads) > sum(b.quantity for b in block.bins):
        return None
    return _typed(block, plan, loads)


def _tabu(block: PackingBlock, plan: _Plan, best: Contents, lb: int, time_limit_s: float) -> Contents:
    """The tabu search's packing when it has fewer bins than `best`."""
    assert plan.one_dim is not None
    loads = packing_tabu.improve(plan.one_dim, _one_dim(plan), _loads(plan, best) or [], lb, time_limit_s)
    if len(loads) >= len(best):
        return best
    return _typed(block, plan, loads)


def _solve_flow(
    block: PackingBlock, plan: _Plan, time_limit_s: float, best: Contents | None = None, lb: int = 0
) -> tuple[int, Contents | None, int, int]:
    """The arc-flow model (one dimension, one capacity): bins in a path each, typed in entry order."""
    assert plan.flow is not None
    kinds = _one_dim(plan)
    ub, lb = sum(b.quantity for b in block.bins), max(lb, plan.lb)
    if ub < lb:
        return cp_model.INFEASIBLE, None, lb, plan.flow.size
    code, loads, bound = packing_flow.search(plan.flow, kinds, lb, ub, _loads(plan, best), time_limit_s, _num_workers())
    if loads is None:
        return code, None, bound, plan.flow.size
    return code, _typed(block, plan, loads), bound, plan.flow.size


def _solve_columns(
    block: PackingBlock, plan: _Plan, time_limit_s: float, best: Contents | None
) -> tuple[int, Contents | None, int, int]:
    """One dimension, the arc-flow graph too large: column generation bounds (a BOUND_SHARE of the
    time), the integer master over its patterns packs."""
    assert plan.one_dim is not None
    started = time.monotonic()
    kinds = _one_dim(plan)
    start = _loads(plan, best) or []
    target = len(best) if best is not None else 1 << 62  # stop once the bound proves the packing
    bound, patterns = packing_colgen.generate(
        plan.one_dim, kinds, start, BOUND_SHARE[plan.flow is not None] * time_limit_s, target
    )
    bound = max(bound, plan.lb)
    if bound > sum(b.quantity for b in block.bins):
        return cp_model.INFEASIBLE, None, bound, len(patterns)
    if best is not None and len(best) <= bound:
        return cp_model.OPTIMAL, best, bound, len(patterns)
    ub = len(best) if best is not None else sum(b.quantity for b in block.bins) + 1
    left = time_limit_s - (time.monotonic() - started)
    loads = packing_colgen.integer_master(kinds, patterns, bound, ub, left, _num_workers())
    if loads is None:
        return cp_model.FEASIBLE if best is not None else cp_model.UNKNOWN, None, bound, len(patterns)
    code = cp_model.OPTIMAL if len(loads) <= bound else cp_model.FEASIBLE
    return code, _typed(block, plan, loads), bound, len(patterns)


def _solve_bins(plan: _Plan, time_limit_s: float) -> tuple[int, list[tuple[int, dict[int, int]]] | None, int, int]:
    """The count model: a variable per (bin, kind), bins of a type opened in order."""
    m = cp_model.CpModel()
    caps = plan.data.caps
    slots: list[tuple[int, Any, dict[int, Any]]] = []
    nvars = 0
    for t, n in enumerate(plan.slots):
        prev = None
        for _ in range(n):
            y = m.NewBoolVar("")
            xs: dict[int, Any] = {}
            for k, kind in enumerate(plan.kinds):
                ub = _fit(caps[t], kind.size, kind.quantity)
                if ub > 0:
                    xs[k] = m.NewIntVar(0, ub, "")
                    if all(s == 0 for s in kind.size):
                        m.Add(xs[k] <= ub * y)
            for d in range(len(plan.data.scales)):
                terms = [kind_size * xs[k] for k in xs if (kind_size := plan.kinds[k].size[d])]
                if terms:
                    m.Add(sum(terms) <= caps[t][d] * y)
            for a, others in plan.clash.items():
                for b in others:
                    if a < b and a in xs and b in xs:
                        ua, ub_ = m.NewBoolVar(""), m.NewBoolVar("")
                        m.Add(xs[a] == 0).OnlyEnforceIf(ua.Not())
                        m.Add(xs[b] == 0).OnlyEnforceIf(ub_.Not())
                        m.AddBoolOr([ua.Not(), ub_.Not()])
                        nvars += 2
            if prev is not None:
                m.AddImplication(y, prev)  # symmetry: bins of a type open in order
            prev = y
            slots.append((t, y, xs))
            nvars += 1 + len(xs)
    for k, kind in enumerate(plan.kinds):
        m.Add(sum(xs[k] for _, _, xs in slots if k in xs) == kind.quantity)
    used = sum(y for _, y, _ in slots)
    m.Add(used >= plan.lb)
    if plan.greedy is not None:
        m.Add(used <= sum(g.n for g in plan.greedy))
        _hint(m, slots, plan)
    m.Minimize(used)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, time_limit_s)
    solver.parameters.num_workers = _num_workers()
    code = solver.Solve(m)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return code, None, plan.lb, nvars
    contents = [(t, {k: solver.Value(x) for k, x in xs.items() if solver.Value(x)}) for t, y, xs in slots]
    return code, [c for c in contents if c[1]], max(plan.lb, round(solver.BestObjectiveBound())), nvars


def _hint(m: cp_model.CpModel, slots: list[tuple[int, Any, dict[int, Any]]], plan: _Plan) -> None:
    assert plan.greedy is not None
    per_type: dict[int, list[dict[int, int]]] = {}
    for g in plan.greedy:
        per_type.setdefault(g.t, []).extend([g.load] * g.n)
    seen: dict[int, int] = {}
    for t, y, xs in slots:
        i = seen.get(t, 0)
        seen[t] = i + 1
        loads = per_type.get(t, [])
        load = loads[i] if i < len(loads) else {}
        m.AddHint(y, bool(load))
        for k, x in xs.items():
            m.AddHint(x, load.get(k, 0))


def _count_conflict(block: PackingBlock) -> list[Conflict]:
    cons = [ConflictConstraint("bin_quantity", b.id, f"{b.quantity} bin(s) {b.id!r} available") for b in block.bins]
    cons.append(ConflictConstraint("item_quantity", ",".join(it.id for it in block.items), "every item must be packed"))
    cons += [
        ConflictConstraint("incompatible", f"{a},{b}", f"{a!r} and {b!r} may not share a bin")
        for a, b in block.incompatible
    ]
    return [Conflict(cons, "the items cannot all be packed into the bins available (proven by exhaustive search)")]


def _solve_knapsack(block: PackingBlock, plan: _Plan, time_limit_s: float, started: float) -> Outcome:
    m = cp_model.CpModel()
    cap = plan.data.caps[0]
    xs: dict[int, Any] = {}
    for k, kind in enumerate(plan.kinds):
        ub = _fit(cap, kind.size, kind.quantity)
        if ub > 0 and kind.value > 0:
            xs[k] = m.NewIntVar(0, ub, "")
    for d in range(len(plan.data.scales)):
        terms = [plan.kinds[k].size[d] * x for k, x in xs.items() if plan.kinds[k].size[d]]
        if terms:
            m.Add(sum(terms) <= cap[d])
    nvars = len(xs)
    for a, others in plan.clash.items():
        for b in others:
            if a < b and a in xs and b in xs:
                ua, ub_ = m.NewBoolVar(""), m.NewBoolVar("")
                m.Add(xs[a] == 0).OnlyEnforceIf(ua.Not())
                m.Add(xs[b] == 0).OnlyEnforceIf(ub_.Not())
                m.AddBoolOr([ua.Not(), ub_.Not()])
                nvars += 2
    m.Maximize(sum(plan.kinds[k].value * x for k, x in xs.items()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.5, time_limit_s - (time.monotonic() - started))
    solver.parameters.num_workers = _num_workers()
    code = solver.Solve(m)
    if code == cp_model.MODEL_INVALID:
        raise RuntimeError(m.Validate())
    found = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    # packing nothing is always feasible: never infeasible, and an empty bin when nothing better was found
    counts = {k: solver.Value(x) for k, x in xs.items()} if found else {}
    contents = [(0, {k: c for k, c in counts.items() if c})]
    bins = _bins_out(block, plan, contents)
    if not bins:
        bins = [{"bin": block.bins[0].id, "index": 0, "items": [], "used": {d: 0.0 for d in block.dimensions}}]
    packed = {it["id"]: it["count"] for it in bins[0]["items"]}
    left_out = [
        {"id": it.id, "count": it.quantity - packed.get(it.id, 0)}
        for it in block.items
        if it.quantity - packed.get(it.id, 0) > 0
    ]
    vs = plan.data.value_scale
    value = unscale(round(solver.ObjectiveValue()), vs) if found else 0.0
    bound = unscale(round(solver.BestObjectiveBound()), vs) if found else None
    sol = {"bins": bins, "left_out": left_out}
    status = cpsat_status(code, True)
    if status == "optimal":
        return Outcome(status, value, value, 0.0, sol, variables_built=nvars)
    return Outcome(
        status,
        value,
        bound,
        None if bound is None else abs(bound - value) / max(1.0, abs(value)),
        sol,
        variables_built=nvars,
    )


check = packing_check.check
objective = packing_check.objective
