"""Allocation: refusals with their codes (including bad_quantity for the lot
ratio), split and whole items, budget, shares with if_used floors, required and
forbidden pairs, infeasibility with an infeasible core, the independent checker
on broken solutions, and hypothesis properties against brute force."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tollway import Refusal
from tollway_solve import allocation_check, tool
from tollway_solve.request import SolveRequest


def request(block: dict[str, Any]) -> Any:
    return msgspec.convert(
        {"problem": "allocation", "time_limit_s": 10, "allocation": block}, SolveRequest, strict=True
    )


def solve(block: dict[str, Any]) -> dict[str, Any]:
    value = request(block)
    tool.check(value)
    return msgspec.to_builtins(tool.run(value))


def code_of(block: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(Refusal) as err:
        tool.check(request(block))
    assert err.value.code == "invalid_input"
    return err.value.extra["code"], err.value.details[0]["field"]


BASE = {
    "objective": "minimise_cost",
    "items": [{"id": "a", "quantity": 30}, {"id": "b", "quantity": 20}],
    "options": [{"id": "n", "capacity": 40}, {"id": "s", "capacity": 40}],
    "pairs": [
        {"item": "a", "option": "n", "cost": 2},
        {"item": "a", "option": "s", "cost": 3},
        {"item": "b", "option": "n", "cost": 4},
        {"item": "b", "option": "s", "cost": 1},
    ],
}


@pytest.mark.parametrize(
    "change,code,field",
    [
        ({"items": []}, "empty_list", "allocation.items"),
        (
            {"options": [{"id": "n", "capacity": 1}, {"id": "n", "capacity": 1}]},
            "duplicate_id",
            "allocation.options[1].id",
        ),
        ({"items": [{"id": ""}]}, "empty_id", "allocation.items[0].id"),
        ({"pairs": [{"item": "zz", "option": "n", "cost": 1}]}, "unknown_id", "allocation.pairs[0].item"),
        (
            {"pairs": [{"item": "a", "option": "n", "cost": 1}, {"item": "a", "option": "n", "cost": 2}]},
            "duplicate_id",
            "allocation.pairs[1]",
        ),
        ({"pairs": [{"item": "a", "option": "n"}]}, "missing_cost", "allocation.pairs[0].cost"),
        ({"objective": "maximise_value"}, "missing_value", "allocation.pairs[0].value"),
        ({"items": [{"id": "a", "quantity": -1}]}, "negative_value", "allocation.items[0].quantity"),
        ({"items": [{"id": "a", "quantity": 1e13}]}, "magnitude_too_large", "allocation.items[0].quantity"),
        ({"items": [{"id": "a", "quantity": 1.0000001}]}, "unsupported_precision", "allocation.items[0].quantity"),
        ({"min_share": [{"option": "n", "share": 1.5}]}, "magnitude_too_large", "allocation.min_share[0].share"),
        (
            {"min_share": [{"option": "n", "share": 0.6}], "max_share": [{"option": "n", "share": 0.5}]},
            "contradictory_input",
            "allocation.max_share[0]",
        ),
        (
            {"required": [{"item": "a", "option": "n"}], "forbidden": [{"item": "a", "option": "n"}]},
            "contradictory_input",
            "allocation.required[0]",
        ),
        (
            {"required": [{"item": "a", "option": "n"}, {"item": "a", "option": "s"}]},
            "contradictory_input",
            "allocation.required[1]",
        ),
        ({"forbidden": [{"item": "a", "option": "x"}]}, "unknown_id", "allocation.forbidden[0].option"),
        (
            {"items": [{"id": "a", "quantity": 0.001}, {"id": "b", "quantity": 5000}], "max_total_cost": 100},
            "bad_quantity",
            "allocation.items",
        ),
    ],
)
def test_refusals(change: dict[str, Any], code: str, field: str) -> None:
    assert code_of({**BASE, **change}) == (code, field)


def test_lot_ratio_only_matters_with_shares_or_budget() -> None:
    block = {
        **BASE,
        "items": [{"id": "a", "quantity": 0.001}, {"id": "b", "quantity": 5000}],
        "options": [{"id": "n", "capacity": 1e4}, {"id": "s", "capacity": 1e4}],
    }
    tool.check(request(block))


def test_whole_items_go_to_the_cheapest_feasible_option() -> None:
    out = solve(BASE)
    assert out["status"] == "optimal" and out["objective_value"] == 80 and out["gap"] == 0
    got = {(a["item"], a["option"]): a["quantity"] for a in out["solution"]["assignments"]}
    assert got == {("a", "n"): 30, ("b", "s"): 20}
    assert out["solution"]["total_cost"] == 80 and out["solution"]["total_value"] is None


def test_split_items_use_spare_capacity() -> None:
    block = {**BASE, "options": [{"id": "n", "capacity": 25}, {"id": "s", "capacity": 40}], "split": True}
    out = solve(block)
    assert out["status"] == "optimal"
    got = {(a["item"], a["option"]): a["quantity"] for a in out["solution"]["assignments"]}
    assert got == {("a", "n"): 25, ("a", "s"): 5, ("b", "s"): 20}
    assert out["objective_value"] == 25 * 2 + 5 * 3 + 20


def test_shares_with_if_used_floor_and_max() -> None:
    block = {
        **BASE,
        "split": True,
        "options": [{"id": "n", "capacity": 100}, {"id": "s", "capacity": 100}, {"id": "w", "capacity": 100}],
        "pairs": BASE["pairs"] + [{"item": "a", "option": "w", "cost": 2.5}, {"item": "b", "option": "w", "cost": 9}],
        "min_share": [{"option": "w", "share": 0.3, "if_used": True}],
        "max_share": [{"option": "n", "share": 0.5}],
    }
    out = solve(block)
    assert out["status"] == "optimal"
    opts = {o["option"]: o for o in out["solution"]["options"]}
    assert opts["n"]["quantity"] <= 25
    assert opts["w"]["quantity"] == 0 or opts["w"]["quantity"] >= 15
    assert {c["name"] for c in out["checks"]} >= {"min_share", "max_share"}


def test_maximise_value_may_leave_items_and_respects_budget() -> None:
    block = {
        "objective": "maximise_value",
        "items": [{"id": "x", "quantity": 2}, {"id": "y", "quantity": 3}],
        "options": [{"id": "o", "capacity": 10}],
        "pairs": [
            {"item": "x", "option": "o", "value": 5, "cost": 4},
            {"item": "y", "option": "o", "value": 1, "cost": 1},
        ],
        "max_total_cost": 7,
    }
    out = solve(block)
    # x (2 units) is worth 10 but costs 8 > 7; y (3 units) is worth 3 and costs 3
    assert out["status"] == "optimal" and out["objective_value"] == 3
    assert out["solution"]["unassigned"] == [{"item": "x", "quantity": 2.0}]
    assert {c["name"]: c["satisfied"] for c in out["checks"]}["budget"] is True


def test_infeasible_core_names_the_clash() -> None:
    block = {**BASE, "options": [{"id": "n", "capacity": 10}, {"id": "s", "capacity": 10}]}
    out = solve(block)
    assert out["status"] == "infeasible" and out["solution"] is None and out["checks"] == []
    families = {c["family"] for c in out["conflicts"][0]["constraints"]}
    assert "capacity" in families or "assignment" in families


def test_checker_catches_broken_solutions() -> None:
    block = request(BASE).allocation
    good = solve(BASE)["solution"]
    assert all(c.satisfied for c in allocation_check.check(block, good))

    def failing(sol: dict[str, Any]) -> set[str]:
        return {c.name for c in allocation_check.check(block, sol) if not c.satisfied}

    over = {
        **good,
        "assignments": [
            {"item": "a", "option": "n", "quantity": 30, "cost": 60, "value": None},
            {"item": "b", "option": "n", "quantity": 20, "cost": 80, "value": None},
        ],
        "total_cost": 140,
    }
    assert failing(over) == {"option_capacity"}
    short = {**good, "assignments": good["assignments"][:1], "total_quantity": 30, "total_cost": 60}
    assert failing(short) == {"item_quantities"}
    split = {
        **good,
        "assignments": [
            {"item": "a", "option": "n", "quantity": 15},
            {"item": "a", "option": "s", "quantity": 15},
            good["assignments"][1],
        ],
        "total_cost": 15 * 2 + 15 * 3 + 20,
    }
    assert failing(split) == {"item_quantities"}
    wrong_total = {**good, "total_cost": 1}
    assert failing(wrong_total) == {"totals_reported"}
    forbidden = request({**BASE, "forbidden": [{"item": "a", "option": "n"}]}).allocation
    assert {c.name for c in allocation_check.check(forbidden, good) if not c.satisfied} == {"known_pairs"}


# -- properties against brute force -----------------------------------------------------
@st.composite
def small_blocks(draw: Any) -> dict[str, Any]:
    n_items, n_opts = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    items = [{"id": f"i{k}", "quantity": draw(st.integers(1, 4))} for k in range(n_items)]
    options = [{"id": f"o{j}", "capacity": draw(st.integers(0, 8))} for j in range(n_opts)]
    maximise = draw(st.booleans())
    key = "value" if maximise else "cost"
    pairs = []
    for it in items:
        for o in options:
            if draw(st.integers(0, 3)):
                pairs.append(
                    {
                        "item": it["id"],
                        "option": o["id"],
                        key: draw(st.integers(0, 9)),
                        "cost": draw(st.integers(0, 9)),
                        "use": draw(st.sampled_from([1, 2, 0.5])),
                    }
                )
    if not pairs:
        pairs.append({"item": items[0]["id"], "option": options[0]["id"], key: 1, "cost": 1})
    block: dict[str, Any] = {
        "objective": "maximise_value" if maximise else "minimise_cost",
        "items": items,
        "options": options,
        "pairs": pairs,
    }
    if draw(st.booleans()):
        block["max_total_cost"] = draw(st.integers(0, 40))
    if draw(st.booleans()):
        block["forbidden"] = [{"item": pairs[0]["item"], "option": pairs[0]["option"]}]
    if draw(st.booleans()):
        block["max_share"] = [{"option": options[0]["id"], "share": draw(st.sampled_from([0.25, 0.5, 1]))}]
    if draw(st.booleans()):
        block["min_share"] = [
            {"option": options[-1]["id"], "share": draw(st.sampled_from([0.2, 0.5])), "if_used": draw(st.booleans())}
        ]
        if (
            block.get("max_share")
            and block["max_share"][0]["option"] == options[-1]["id"]
            and block["max_share"][0]["share"] < block["min_share"][0]["share"]
        ):
            del block["max_share"]
    if maximise and draw(st.booleans()):
        block["assign_all"] = True
    return block


def brute(block: dict[str, Any]) -> float | None:
    """Whole items, each to one allowed option or (maximise_value without assign_all) to none."""
    full = block["objective"] == "minimise_cost" or block.get("assign_all")
    forbidden = {(f["item"], f["option"]) for f in block.get("forbidden", [])}
    pairs = {(p["item"], p["option"]): p for p in block["pairs"] if (p["item"], p["option"]) not in forbidden}
    choices = [
        [o["id"] for o in block["options"] if (it["id"], o["id"]) in pairs] + ([] if full else [None])
        for it in block["items"]
    ]
    key = "value" if block["objective"] == "maximise_value" else "cost"
    best = None
    for pick in itertools.product(*choices):
        load = {o["id"]: 0.0 for o in block["options"]}
        amount = {o["id"]: 0.0 for o in block["options"]}
        cost = obj = 0.0
        for it, o in zip(block["items"], pick):
            if o is None:
                continue
            p = pairs[(it["id"], o)]
            load[o] += p.get("use", 1) * it["quantity"]
            amount[o] += it["quantity"]
            cost += p["cost"] * it["quantity"]
            obj += p[key] * it["quantity"]
        total = sum(amount.values())
        if any(load[o["id"]] > o["capacity"] for o in block["options"]):
            continue
        if "max_total_cost" in block and cost > block["max_total_cost"]:
            continue
        if any(amount[s["option"]] > s["share"] * total + 1e-9 for s in block.get("max_share", [])):
            continue
        if any(
            amount[s["option"]] < s["share"] * total - 1e-9 and not (s.get("if_used") and amount[s["option"]] == 0)
            for s in block.get("min_share", [])
        ):
            continue
        if best is None or (obj < best if key == "cost" else obj > best):
            best = obj
    return best


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_blocks())
def test_answers_are_checked_and_agree_with_brute_force(block: dict[str, Any]) -> None:
    out = solve(block)  # run() raises if any check fails
    truth = brute(block)
    if out["status"] == "infeasible":
        assert truth is None
        assert out["conflicts"] and out["conflicts"][0]["constraints"]
    else:
        assert out["status"] == "optimal" and truth is not None
        assert out["objective_value"] == pytest.approx(truth)
