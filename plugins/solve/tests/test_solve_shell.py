"""The solve shell: request refusals before payment (400 invalid_input with a
specific code), the published price formula, the check-or-fail rule, and the
whole paid job through the kernel (credits, Idempotency-Key, 202, a Worker,
polling) on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import pickle
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec
import pytest

from tollway import Refusal
from tollway.testing import (
    count_quotes,
    count_receipts,
    credits_session,
    http_client,
    keyed_job_round_trip,
    wait_for_job,
    worker_for,
)
from tollway_solve import registry, tool
from tollway_solve.family import Check, Outcome
from tollway_solve.pricing import price_micro
from tollway_solve.request import SolveRequest

PACKING = copy.deepcopy(dict(tool.EXAMPLES[0].input))


def value_of(body: dict[str, Any]) -> Any:
    return msgspec.convert(body, SolveRequest, strict=True)


def refusal(body: dict[str, Any]) -> Refusal:
    with pytest.raises(Refusal) as err:
        tool.check(value_of(body))
    assert err.value.status == 400 and err.value.code == "invalid_input"
    assert err.value.details and err.value.details[0]["field"]
    return err.value


def test_time_limit_range_and_default() -> None:
    body = {k: v for k, v in PACKING.items() if k != "time_limit_s"}
    assert value_of(body).time_limit_s == 30
    for bad in (0, 301):
        assert refusal({**PACKING, "time_limit_s": bad}).extra["code"] == "bad_time_limit"


def test_block_rules() -> None:
    assert refusal({"problem": "packing"}).extra["code"] == "missing_block"
    other = {**PACKING, "allocation": tool.EXAMPLES[1].input["allocation"]}
    assert refusal(other).extra["code"] == "unexpected_block"


def test_unknown_fields_are_refused() -> None:
    for body in ({**PACKING, "extra": 1}, {**PACKING, "packing": {**PACKING["packing"], "colour": "red"}}):
        with pytest.raises(msgspec.ValidationError):
            value_of(body)


def test_missing_family_is_unsupported_before_payment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(registry.FAMILIES, "packing")
    err = refusal(PACKING)
    assert err.extra["code"] == "unsupported_problem" and err.details[0]["field"] == "problem"


def test_absent_family_modules_are_tolerated() -> None:
    assert registry._load("no_such_family") is None
    assert {"packing", "allocation"} <= set(registry.FAMILIES)


def test_too_many_variables() -> None:
    # 2,000 distinct items, each needing a bin of its own: the greedy packing gives up, and the
    # count model would need 2,000 bins x 2,001 variables
    items = [{"id": f"i{j}", "size": {"kg": 51 + j % 40, "l": 1 + j}} for j in range(2000)]
    body = {
        "problem": "packing",
        "packing": {
            "variant": "bin",
            "dimensions": ["kg", "l"],
            "bins": [{"id": "b", "capacity": {"kg": 100, "l": 10**6}, "quantity": 2000}],
            "items": items,
        },
    }
    err = refusal(body)
    assert err.extra["code"] == "too_many_variables"


def test_price_formula_is_published_and_deterministic() -> None:
    v = value_of(PACKING)
    units = registry.FAMILIES["packing"].price_units(v.packing)
    assert tool.price(v) == price_micro(units, 10) == 10_000 + 1_000 * max(1, -(-units // 1000)) + 200 * 10
    assert price_micro(10**9, 300) == 10_000 + 2_000_000 + 60_000  # the size term is capped
    bigger = value_of({**PACKING, "time_limit_s": 60})
    assert tool.price(bigger) == tool.price(v) + 200 * 50


class _LyingFamily:
    """Returns a solution its own checker rejects: the tool must fail the job."""

    name = "packing"
    VERSION = "lying-1"
    block_type = dict

    def validate(self, block: Any) -> None: ...
    def estimate_variables(self, block: Any) -> int:
        return 1

    def size(self, block: Any) -> dict[str, int]:
        return {"n": 1}

    def price_units(self, block: Any) -> int:
        return 1

    def solve(self, block: Any, time_limit_s: float) -> Outcome:
        return Outcome("optimal", 1.0, 1.0, 0.0, {"x": 1}, variables_built=1)

    def check(self, block: Any, solution: dict[str, Any]) -> list[Check]:
        return [Check("capacity", False, 3.0, "over by 3")]

    def objective(self, block: Any, solution: dict[str, Any]) -> float:
        return 1.0


def test_a_solution_failing_a_check_fails_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.FAMILIES, "packing", _LyingFamily())
    with pytest.raises(tool.SolveFailed) as err:
        tool.run(value_of(PACKING))
    assert err.value.code == "internal_error" and "capacity" in err.value.message
    again = pickle.loads(pickle.dumps(err.value))  # crosses the process pool intact
    assert (again.code, again.message, again.status) == (err.value.code, err.value.message, 500)


def test_results_carry_the_familys_version() -> None:
    """Solve results carry a `version`, as Predict's do: the family's model
    revision and the OR-Tools release it ran on."""
    import ortools

    for example in tool.EXAMPLES:
        body = copy.deepcopy(dict(example.input))
        fam = registry.FAMILIES[body["problem"]]
        out = msgspec.to_builtins(tool.run(value_of(body)))
        assert out["version"] == fam.VERSION and fam.VERSION.endswith(f"ortools-{ortools.__version__}")
    for p, f in registry.FAMILIES.items():
        name, revision = f.VERSION.split("/")[0].rsplit("-", 1)
        assert name == p and int(revision) >= 1
    if "routing" in registry.FAMILIES:  # routing runs on PyVRP, with OR-Tools for what PyVRP cannot express
        assert registry.FAMILIES["routing"].VERSION.endswith(f"+ortools-{ortools.__version__}")
        assert registry.FAMILIES["routing"].VERSION.split("/")[1].startswith("pyvrp-")
    assert "version" in tool.SOLVE.output_schema()["$defs"]["SolveResponse"]["required"]


def test_a_family_without_a_version_is_not_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    half = types.ModuleType("tollway_solve.half")
    for attr in registry._REQUIRED:
        if attr != "VERSION":
            setattr(half, attr, getattr(registry.FAMILIES["packing"], attr))
    monkeypatch.setitem(sys.modules, "tollway_solve.half", half)
    assert registry._load("half") is None
    half.VERSION = "half-1"
    assert registry._load("half") is half


def test_objective_disagreement_fails_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    class Off(_LyingFamily):
        def check(self, block: Any, solution: dict[str, Any]) -> list[Check]:
            return []

        def objective(self, block: Any, solution: dict[str, Any]) -> float:
            return 2.0

    monkeypatch.setitem(registry.FAMILIES, "packing", Off())
    with pytest.raises(tool.SolveFailed, match="objective"):
        tool.run(value_of(PACKING))


def test_every_response_field_is_present() -> None:
    out = msgspec.to_builtins(tool.run(value_of(PACKING)))
    assert set(out) == {
        "version",
        "status",
        "objective_value",
        "bound",
        "gap",
        "solution",
        "checks",
        "conflicts",
        "meta",
    }
    assert set(out["meta"]) == {
        "problem",
        "size",
        "variables_estimated",
        "variables_built",
        "solve_time_s",
        "time_limit_s",
        "conflicts_complete",
        "warnings",
    }
    assert out["meta"]["warnings"] == []
    assert out["status"] == "optimal" and out["gap"] == 0 and out["bound"] == out["objective_value"] == 3
    assert all(set(c) == {"name", "satisfied", "worst_violation", "detail"} and c["satisfied"] for c in out["checks"])


# -- through the kernel ------------------------------------------------------------------
@pytest.fixture
async def kernel(kernel_factory: Any) -> Any:
    return await kernel_factory(installed={"tollway_solve"})


async def test_paid_solve_job_end_to_end(kernel: Any) -> None:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        job, done = await keyed_job_round_trip(
            kernel, client, "solve", PACKING, auth=auth, changed={**PACKING, "time_limit_s": 11}
        )
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert done["status"] == "completed", done
    result = done["result"]
    assert result["status"] == "optimal" and result["objective_value"] == 3 and result["gap"] == 0
    assert all(c["satisfied"] for c in result["checks"]) and {c["name"] for c in result["checks"]} >= {
        "bin_capacity",
        "every_item_packed",
        "incompatible_pairs",
        "objective",
    }
    assert result["meta"]["problem"] == "packing" and result["meta"]["time_limit_s"] == 10
    assert result["version"] == registry.FAMILIES["packing"].VERSION
    price = tool.price(value_of(PACKING))
    assert balance["credits_balance"] == f"{(1_000_000 - price) / 1e6:.6f}"
    receipt = await kernel.receipts.get(job["receipt_id"])
    assert receipt["execution_status"] == "completed" and receipt["category"] == "infrastructure"


async def test_refused_input_never_quotes(kernel: Any) -> None:
    bad = {**PACKING, "packing": {**PACKING["packing"], "incompatible": [["books", "books"]]}}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post("/v1/tools/solve", json=bad, headers={**auth, "Idempotency-Key": "solve-bad-0001"})
    assert resp.status_code == 400
    body = resp.json()
    assert body["error"] == "invalid_input" and body["code"] == "contradictory_input" and body["message"]
    assert body["details"][0]["field"] == "packing.incompatible[0]"
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


async def test_failed_check_fails_the_job_and_refunds(kernel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = (
            await client.post("/v1/tools/solve", json=PACKING, headers={**auth, "Idempotency-Key": "solve-lie-0001"})
        ).json()
        monkeypatch.setitem(registry.FAMILIES, "packing", _LyingFamily())
        with ThreadPoolExecutor(1) as pool:  # in-process, so the lying family is the one that runs
            worker = worker_for(kernel, poll_s=0.05, pool=pool)
            worker.start()
            try:
                failed = await wait_for_job(client, accepted["request_id"], auth)
            finally:
                await worker.stop()
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert failed["status"] == "failed" and failed["error_code"] == "internal_error"
    assert "capacity" in failed["error"]
    assert balance["credits_balance"] == "1.000000"
    receipt = await kernel.receipts.get(accepted["receipt_id"])
    assert receipt["status"] == "refunded" and receipt["execution_status"] == "failed"


async def test_shape_errors_are_invalid_input_with_a_code(kernel_factory) -> None:
    """docs/solve.md: unknown fields (and any wrong shape) are refused before payment with
    400 invalid_input carrying a code and a message."""
    from tollway.testing import count_quotes, http_client

    kernel = await kernel_factory(installed={"tollway_solve"})
    key = {"Idempotency-Key": "shape-1"}
    async with http_client(kernel) as client:
        unknown = await client.post("/v1/tools/solve", json={"problem": "packing", "colour": "red"}, headers=key)
        wrong = await client.post("/v1/tools/solve", json={"problem": "packing", "time_limit_s": "soon"}, headers=key)
        missing = await client.post("/v1/tools/solve", json={}, headers=key)
    assert unknown.status_code == 400 and unknown.json()["error"] == "invalid_input"
    assert unknown.json()["code"] == "unknown_field" and unknown.json()["details"][0]["field"] == "colour"
    assert wrong.json()["error"] == "invalid_input" and wrong.json()["code"] == "bad_value"
    assert missing.json()["error"] == "invalid_input" and missing.json()["code"] == "missing_field"
    assert await count_quotes(kernel) == 0


async def test_every_wrong_field_is_named_with_its_nested_path(kernel: Any) -> None:
    """msgspec stops at the first problem; the answer still names every wrong field,
    each with its dotted/indexed path and a message that says what is expected."""
    block = copy.deepcopy(PACKING["packing"])
    block["bins"][0]["quantity"] = "ten"
    block["items"][2]["size"]["kg"] = "heavy"
    block["items"][2]["colour"] = "red"
    del block["items"][1]["id"]
    block["incompatible"] = [["books"]]
    body = {**PACKING, "time_limit_s": 2.5, "packing": block}
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/solve", json=body, headers={"Idempotency-Key": "solve-many-0001"})
    assert resp.status_code == 400, resp.text
    answer = resp.json()
    assert answer["error"] == "invalid_input" and answer["code"] == "bad_value"
    assert answer["details"] == [
        {"field": "time_limit_s", "message": "time_limit_s must be a whole number"},
        {"field": "packing.bins[0].quantity", "message": "packing.bins[0].quantity must be a whole number"},
        {
            "field": "packing.items[1].id",
            "message": "packing.items[1].id is required (a string of at most 100 characters)",
        },
        {"field": "packing.items[2].size.kg", "message": "packing.items[2].size.kg must be a number"},
        {"field": "packing.items[2].colour", "message": "packing.items[2].colour is not an accepted field"},
        {"field": "packing.incompatible[0]", "message": "packing.incompatible[0] must be a list of exactly 2 items"},
    ]
    assert answer["message"] == (
        "6 fields are invalid: time_limit_s, packing.bins[0].quantity, packing.items[1].id, packing.items[2].size.kg, "
        "packing.items[2].colour, packing.incompatible[0]."
    )
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0
