"""One-dimensional bin packing one bin fewer at a time: a tabu search over packings whose bins may overflow."""

from __future__ import annotations

import time

import numpy as np

Load = dict[int, int]  # kind -> units in one bin
MAX_UNITS = 5_000  # units are expanded one by one: larger packings are left to the other methods
MAX_CELLS = 4_000_000  # units x bins of the tabu table
STALL = 3_000  # moves without a lower overflow before the search drops another bin
TRIES = 2  # stalled searches for one bin fewer before giving up (the bound may be below the optimum)
TENURE = (100, 100)  # a unit that left a bin stays out of it for 100 + up to 99 moves


def improve(
    cap: int, kinds: list[tuple[int, int]], start: list[Load], lb: int, time_limit_s: float, seed: int = 0
) -> list[Load]:
    """From the packing `start` (one-dimensional loads of `kinds` = (size, units)), packings
    one bin fewer at a time until `lb` bins or the time runs out; the best packing found."""
    deadline = time.monotonic() + time_limit_s
    weights: list[int] = []
    stacks: dict[int, list[int]] = {}
    for k, (w, d) in enumerate(kinds):
        if w > 0 and d > 0:
            stacks[k] = list(range(len(weights), len(weights) + d))
            weights += [w] * d
    if not weights or len(weights) > MAX_UNITS or len(weights) * len(start) > MAX_CELLS:
        return start
    kind_of = np.repeat([k for k in stacks], [len(stacks[k]) for k in stacks])
    bins: list[list[int]] = []
    for load in start:
        units = [stacks[k].pop() for k, c in load.items() if k in stacks for _ in range(c)]
        if units:
            bins.append(units)
    if any(stacks.values()):
        return start  # the start does not hold every unit: nothing to improve on
    w = np.asarray(weights, dtype=np.int64)
    rng = np.random.default_rng(seed)
    while len(bins) > lb and time.monotonic() < deadline:
        fewer = _one_fewer(cap, w, bins, rng, deadline)
        if fewer is None:
            break
        bins = fewer
    if len(bins) >= len(start):
        return start
    out: list[Load] = []
    for units in bins:
        load: Load = {}
        for u in units:
            k = int(kind_of[u])
            load[k] = load.get(k, 0) + 1
        out.append(load)
    return out


def _one_fewer(
    cap: int, w: np.ndarray, start: list[list[int]], rng: np.random.Generator, deadline: float
) -> list[list[int]] | None:
    """A packing of every unit in len(start) - 1 bins, or None when the time runs out or TRIES
    searches stalled: a bin
    is dropped, its units put where the most room is (bins may overflow), and a tabu search
    moves units until no bin overflows; a stalled search restarts dropping another bin."""
    loads = np.array([int(w[b].sum()) for b in start], dtype=np.int64)
    tries = 0
    while time.monotonic() < deadline and tries < TRIES:
        if tries == 0:
            drop = int(np.argmin(loads))
        else:  # bins drawn with weight to their room
            room = (cap - loads + 1).astype(float)
            drop = int(rng.choice(len(start), p=room / room.sum()))
        tries += 1
        bins = [b for i, b in enumerate(start) if i != drop]
        where = np.full(len(w), -1, dtype=np.int64)
        for b, units in enumerate(bins):
            where[units] = b
        load = np.array([int(w[b].sum()) for b in bins], dtype=np.int64)
        for u in sorted(start[drop], key=lambda u: -int(w[u])):
            b = int(np.argmin(load))
            where[u] = b
            load[b] += w[u]
        if _search(cap, w, where, load, rng, deadline):
            out: list[list[int]] = [[] for _ in range(len(bins))]
            for u, b in enumerate(where):
                out[int(b)].append(u)
            return [b for b in out if b]
    return None


def _search(
    cap: int, w: np.ndarray, where: np.ndarray, load: np.ndarray, rng: np.random.Generator, deadline: float
) -> bool:
    """Tabu search on the total overflow (load above the capacity, summed over bins): each
    step the best move not tabu (a tabu move only when it beats the best overflow seen) among
    a unit of an overflowing bin shifted to another bin or swapped with a unit of another bin.
    `where` (unit -> bin) and `load` change in place; True once no bin overflows."""
    n, m = len(w), len(load)
    tabu = np.zeros((n, m), dtype=np.int32)  # iteration until which a unit may not enter a bin
    bins_range = np.arange(m)
    over = np.maximum(load - cap, 0)
    best = int(over.sum())
    it = since = 0
    while best > 0:
        it += 1
        since += 1
        if since > STALL or (it & 63 == 0 and time.monotonic() > deadline):
            return False
        hot = np.flatnonzero(where >= 0)
        hot = hot[load[where[hot]] > cap]  # units in overflowing bins
        a = where[hot]
        wu = w[hot]
        total = int(over.sum())
        # shift: hot unit -> bin b
        after_a = np.maximum(load[a] - wu - cap, 0) - over[a]
        after_b = np.maximum(load[None, :] + wu[:, None] - cap, 0) - over[None, :]
        shift = after_a[:, None] + after_b
        ok = a[:, None] != bins_range[None, :]
        ok &= (tabu[hot] <= it) | (total + shift < best)
        shift = np.where(ok, shift, np.iinfo(np.int64).max)
        # swap: hot unit u (bin a) with unit v (bin b)
        d = wu[:, None] - w[None, :]
        b = where[None, :]
        swap = np.maximum(load[a][:, None] - d - cap, 0) - over[a][:, None] + np.maximum(load[b] + d - cap, 0) - over[b]
        ok = (a[:, None] != b) & (d != 0)
        ok &= ((tabu[hot][:, where] <= it) & ((tabu[:, a] <= it).T)) | (total + swap < best)
        swap = np.where(ok, swap, np.iinfo(np.int64).max)
        tops = (int(shift.min()), int(swap.min()))
        kind = int(np.argmin(tops))
        if tops[kind] == np.iinfo(np.int64).max:
            return False
        grid = (shift, swap)[kind]
        near = np.flatnonzero(grid.ravel() == tops[kind])
        r, c = np.unravel_index(int(rng.choice(near)), grid.shape)
        tenure = TENURE[0] + int(rng.integers(0, TENURE[1]))
        u = int(hot[r])
        src = int(where[u])
        if kind == 0:
            dst = int(c)
            where[u] = dst
            load[src] -= w[u]
            load[dst] += w[u]
        else:
            v = int(c)
            dst = int(where[v])
            where[u], where[v] = dst, src
            load[src] += w[v] - w[u]
            load[dst] += w[u] - w[v]
            tabu[v, dst] = it + tenure
        tabu[u, src] = it + tenure
        over = np.maximum(load - cap, 0)
        if int(over.sum()) < best:
            best, since = int(over.sum()), 0
    return True
