"""The routing request block (msgspec Structs) and the helpers the family and its
model share: location ids, matrices, the amount scale, number and window checks."""

from __future__ import annotations

import math
from typing import Annotated, Literal

import msgspec

from .bounds import BIG, Amount, Id, Signed, Unit, items, limit, shown
from .family import InputProblem

MAX_STOPS = 500
MAX_MAGNITUDE = 1e12
MAX_VEHICLES = 12_500  # 4 * (1 stop + 2 * vehicles) stays within the 100,000-variable estimate
MAX_LOCATIONS = 1_000  # matrix ids (and rows, columns) or coordinates
MAX_WINDOWS = 100  # time windows of one stop
DEFAULT_SPEED = 40.0  # distance units per hour when neither speed nor a time matrix is given
MAX_FLEET = 1_000  # identical vehicles one entry stands for (`count`)


class LocationRef(msgspec.Struct, forbid_unknown_fields=True):
    id: Id


class Window(msgspec.Struct, forbid_unknown_fields=True):
    start: Amount
    end: Amount


class Vehicle(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    capacity: Amount
    start: LocationRef
    end: LocationRef | None = None
    shift: Window | None = None
    # identical vehicles this entry stands for; refused by msgspec (every failing field named)
    # unless a whole number from 1 to MAX_FLEET. Copies are named `<id>#1` .. `<id>#<count>`.
    count: Annotated[int, limit(ge=1, le=MAX_FLEET)] = 1


class Stop(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    location: LocationRef
    demand: Amount = 0
    service: Amount = 0
    windows: items(Window, most=MAX_WINDOWS, enforce=True) | None = None  # type: ignore[valid-type]


class Matrix(msgspec.Struct, forbid_unknown_fields=True):
    ids: items(Id, most=MAX_LOCATIONS, least=1, enforce=True)  # type: ignore[valid-type]
    distance: items(items(Amount, most=MAX_LOCATIONS, enforce=True), most=MAX_LOCATIONS, enforce=True)  # type: ignore[valid-type]
    time: items(items(Amount, most=MAX_LOCATIONS, enforce=True), most=MAX_LOCATIONS, enforce=True) | None = None  # type: ignore[valid-type]


class Coordinate(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    x: Signed
    y: Signed


class RoutingBlock(msgspec.Struct, forbid_unknown_fields=True):
    vehicles: items(Vehicle, most=MAX_VEHICLES, least=1)  # type: ignore[valid-type]
    stops: items(Stop, most=MAX_STOPS, least=1)  # type: ignore[valid-type]
    objective: Literal["distance", "time", "vehicles_then_distance"] = "distance"
    matrix: Matrix | None = None
    coordinates: items(Coordinate, most=MAX_LOCATIONS, least=1, enforce=True) | None = None  # type: ignore[valid-type]
    speed: Annotated[float, shown(exclusiveMinimum=0, maximum=BIG)] = DEFAULT_SPEED
    distance_unit: Unit = "km"
    time_unit: Unit = "minutes"


def _num(v: float, field: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputProblem("bad_magnitude", f"{field} must be a finite number", field)
    if v < 0:
        raise InputProblem("bad_magnitude", f"{field} must be nonnegative", field)
    if v > MAX_MAGNITUDE:
        raise InputProblem("bad_magnitude", f"{field} must be at most 1e12", field)


def amount_scale(block: RoutingBlock) -> int:
    vals = [v.capacity for v in block.vehicles] + [s.demand for s in block.stops]
    for k in range(7):
        s = 10**k
        if all(abs(x * s - round(x * s)) <= 1e-9 * max(1.0, abs(x * s)) for x in vals):
            return s
    raise InputProblem(
        "unsupported_precision", "capacities and demands have more than 6 decimals", "routing.stops[].demand"
    )


def fleet_size(block: RoutingBlock) -> int:
    return sum(v.count for v in block.vehicles)


def copy_id(v: Vehicle, k: int) -> str:
    """The name of copy k (0-based) of a vehicle entry: its id alone when count is 1."""
    return v.id if v.count == 1 else f"{v.id}#{k + 1}"


def expand(block: RoutingBlock, most: int | None = None) -> RoutingBlock:
    """The block with every vehicle entry repeated `count` times under its copies' names
    (at most `most` copies of an entry: more vehicles than stops are never all used)."""
    if all(v.count == 1 for v in block.vehicles):
        return block
    vs = [
        msgspec.structs.replace(v, id=copy_id(v, k), count=1)
        for v in block.vehicles
        for k in range(v.count if most is None else min(v.count, most))
    ]
    return msgspec.structs.replace(block, vehicles=vs)


def location_ids(block: RoutingBlock) -> list[str]:
    if block.matrix is not None:
        return list(block.matrix.ids)
    return [c.id for c in block.coordinates or []]


def matrices(block: RoutingBlock) -> tuple[list[list[float]], list[list[float]]]:
    """(distance, time) over location_ids(block), in input units."""
    if block.matrix is not None:
        d = block.matrix.distance
        t = block.matrix.time
    else:
        cs = block.coordinates or []
        d = [[math.hypot(a.x - b.x, a.y - b.y) for b in cs] for a in cs]
        t = None
    if t is None:
        f = 60.0 / block.speed
        t = [[x * f for x in row] for row in d]
    return d, t


def _windows(ws: list[Window] | None, field: str) -> None:
    if not ws:
        return
    for k, w in enumerate(ws):
        _num(w.start, f"{field}[{k}].start")
        _num(w.end, f"{field}[{k}].end")
        if w.end < w.start:
            raise InputProblem("reversed_window", f"window {k} ends before it starts", f"{field}[{k}]")
    s = sorted(ws, key=lambda w: w.start)
    for a, b in zip(s, s[1:]):
        if b.start <= a.end:
            raise InputProblem(
                "overlapping_windows", f"windows [{a.start},{a.end}] and [{b.start},{b.end}] overlap", field
            )
