"""The predict shell: refusals before payment (400 invalid_input with a specific
code, and the character position for expressions), the published price
formula, the response layout, and the whole paid job through the kernel
(credits, Idempotency-Key, 202, a Worker, polling) on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
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
from tollway_predict import request as request_mod
from tollway_predict import simulation, tool
from tollway_predict.pricing import price_micro
from tollway_predict.request import PredictRequest

SIM = copy.deepcopy(dict(tool.EXAMPLES[0].input))


def value_of(body: dict[str, Any]) -> Any:
    return msgspec.convert(body, PredictRequest, strict=True)


def refusal(body: dict[str, Any]) -> Refusal:
    with pytest.raises(Refusal) as err:
        tool.check(value_of(body))
    assert err.value.status == 400 and err.value.code == "invalid_input"
    assert err.value.details and err.value.details[0]["field"]
    return err.value


def with_sim(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(SIM)
    body["simulation"].update(changes)
    return body


def test_example_is_valid() -> None:
    tool.check(value_of(SIM))


def test_time_limit_range_and_default() -> None:
    body = {k: v for k, v in SIM.items() if k != "time_limit_s"}
    assert value_of(body).time_limit_s == 20
    for bad in (0, 121):
        assert refusal({**SIM, "time_limit_s": bad}).extra["code"] == "bad_time_limit"
    tool.check(value_of({**SIM, "time_limit_s": 120}))


def test_block_rules() -> None:
    assert refusal({"model": "simulation"}).extra["code"] == "missing_block"
    other = {**SIM, "forecast": {"series": [], "horizon": 1}}
    with pytest.raises((Refusal, msgspec.ValidationError)):
        tool.check(value_of(other))


def test_unexpected_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_mod, "forecast_module", None)
    err = refusal({**SIM, "forecast": None, "model": "forecast"})
    assert err.extra["code"] in ("unsupported_model", "unexpected_block")
    err = refusal({**SIM, "model": "forecast"})
    assert err.extra["code"] == "unexpected_block" and err.details[0]["field"] == "simulation"


FORECAST = {"model": "forecast", "forecast": {"series": [{"t": i, "y": float(i % 3)} for i in range(12)], "horizon": 2}}


def test_forecast_missing_is_unsupported_before_payment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_mod, "forecast_module", None)
    for body in (FORECAST, {"model": "forecast"}):
        err = refusal(body)
        assert err.extra["code"] == "unsupported_model" and err.details[0]["field"] == "model"


def test_absent_forecast_module_is_tolerated() -> None:
    """Without forecast.py the plugin still imports, and any forecast block is refused
    as unsupported_model (not as an unknown field) before payment."""
    script = (
        "import sys, msgspec\n"
        "sys.modules['tollway_predict.forecast'] = None\n"
        "from tollway_predict import tool\n"
        "from tollway_predict.request import PredictRequest\n"
        "from tollway import Refusal\n"
        "v = msgspec.convert({'model': 'forecast', 'forecast': {'anything': 1}}, PredictRequest, strict=True)\n"
        "try:\n    tool.check(v)\nexcept Refusal as e:\n    print(e.extra['code'])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "unsupported_model", out.stderr


def test_unknown_fields_are_refused() -> None:
    for body in ({**SIM, "extra": 1}, with_sim(colour="red")):
        with pytest.raises(msgspec.ValidationError):
            value_of(body)


def test_expression_errors_carry_position() -> None:
    body = with_sim(outputs=[{"id": "units", "expression": "demand * pricee"}])
    err = refusal(body)
    assert err.extra["code"] == "unknown_name" and err.extra["position"] == 9
    assert err.details[0] == {
        "field": "simulation.outputs[0].expression",
        "message": err.details[0]["message"],
        "position": 9,
    }
    assert refusal(with_sim(runs=50)).extra["code"] == "bad_runs"


def test_price_formula_is_published_and_deterministic() -> None:
    v = value_of(SIM)
    units = 10_000 * (4 + 3)
    assert tool.size_units(v) == units
    assert tool.price(v) == price_micro(units, 10) == 10_000 + 1_000 * 1 + 200 * 10
    big = value_of({**with_sim(runs=100_000), "time_limit_s": 60})
    assert tool.price(big) == 10_000 + 1_000 * 7 + 200 * 60
    assert price_micro(10**12, 120) == 10_000 + 1_000_000 + 24_000  # the size term is capped


def test_every_response_field_is_present() -> None:
    out = msgspec.to_builtins(tool.run(value_of(SIM)))
    assert set(out) == {"model", "version", "status", "prediction", "uncertainty", "checks", "meta"}
    assert out["model"] == "simulation" and out["version"] == simulation.VERSION and out["status"] == "complete"
    assert [p["id"] for p in out["prediction"]] == ["units", "profit", "loss"]
    assert set(out["prediction"][0]) == {"id", "mean", "median"}
    assert set(out["uncertainty"][0]) == {"id", "sd", "mean_standard_error", "min", "max", "percentiles"}
    assert [q["p"] for q in out["uncertainty"][0]["percentiles"]] == [5, 95]
    assert out["meta"]["seed"] == 42 and out["meta"]["time_limit_s"] == 10


def test_a_failing_run_fails_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(block: Any, time_limit_s: float) -> dict[str, Any]:
        raise ValueError("no")

    monkeypatch.setattr(simulation, "run_simulation", boom)
    with pytest.raises(tool.PredictFailed) as err:
        tool.run(value_of(SIM))
    assert err.value.code == "internal_error"
    again = pickle.loads(pickle.dumps(err.value))  # crosses the process pool intact
    assert (again.code, again.message, again.status) == (err.value.code, err.value.message, 500)


# -- through the kernel ------------------------------------------------------------------
@pytest.fixture
async def kernel(kernel_factory: Any) -> Any:
    return await kernel_factory(installed={"tollway_predict"})


async def test_paid_predict_job_end_to_end(kernel: Any) -> None:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        job, done = await keyed_job_round_trip(
            kernel, client, "predict", SIM, auth=auth, changed={**SIM, "time_limit_s": 11}
        )
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert done["status"] == "completed", done
    result = done["result"]
    assert (
        result["model"] == "simulation" and result["status"] == "complete" and result["version"] == simulation.VERSION
    )
    # the same scenario, seed and version reproduce the answer
    local = msgspec.to_builtins(tool.run(value_of(SIM)))
    assert result["prediction"] == local["prediction"] and result["uncertainty"] == local["uncertainty"]
    price = tool.price(value_of(SIM))
    assert balance["credits_balance"] == f"{(1_000_000 - price) / 1e6:.6f}"
    receipt = await kernel.receipts.get(job["receipt_id"])
    assert receipt["execution_status"] == "completed" and receipt["category"] == "infrastructure"


async def test_refused_input_never_quotes(kernel: Any) -> None:
    bad = with_sim(outputs=[{"id": "units", "expression": "demand +"}])
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post("/v1/tools/predict", json=bad, headers={**auth, "Idempotency-Key": "predict-bad-0001"})
    assert resp.status_code == 400
    body = resp.json()
    assert body["error"] == "invalid_input" and body["code"] == "bad_expression" and body["position"] == 8
    assert body["details"][0]["field"] == "simulation.outputs[0].expression"
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


async def _job_with(
    kernel: Any, monkeypatch: pytest.MonkeyPatch, fake: Any, key: str
) -> tuple[dict[str, Any], dict[str, Any], Any]:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        accepted = (await client.post("/v1/tools/predict", json=SIM, headers={**auth, "Idempotency-Key": key})).json()
        monkeypatch.setattr(simulation, "run_simulation", fake)
        with ThreadPoolExecutor(1) as pool:  # in-process, so the patched run is the one that runs
            worker = worker_for(kernel, poll_s=0.05, pool=pool)
            worker.start()
            try:
                done = await wait_for_job(client, accepted["request_id"], auth)
            finally:
                await worker.stop()
        balance = (await client.get("/v1/balance", headers=auth)).json()
    return done, balance, await kernel.receipts.get(accepted["receipt_id"])


async def test_failed_run_fails_the_job_and_refunds(kernel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(block: Any, time_limit_s: float) -> dict[str, Any]:
        raise ValueError("broken")

    failed, balance, receipt = await _job_with(kernel, monkeypatch, boom, "predict-fail-0001")
    assert failed["status"] == "failed" and failed["error_code"] == "internal_error"
    assert balance["credits_balance"] == "1.000000"
    assert receipt["status"] == "refunded" and receipt["execution_status"] == "failed"


async def test_timeout_returns_partial_work_and_stays_charged(kernel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real = simulation.run_simulation

    def capped(block: Any, time_limit_s: float) -> dict[str, Any]:
        return real(msgspec.structs.replace(block, runs=30_000), 0)  # a zero cap: stops after the first chunk

    done, balance, receipt = await _job_with(kernel, monkeypatch, capped, "predict-timeout-0001")
    assert done["status"] == "completed", done
    assert done["result"]["status"] == "timeout" and done["result"]["meta"]["runs_completed"] == simulation.CHUNK
    assert done["result"]["prediction"][1]["mean"] is not None
    assert balance["credits_balance"] == f"{(1_000_000 - tool.price(value_of(SIM))) / 1e6:.6f}"
    assert receipt["execution_status"] == "completed"


async def test_shape_errors_are_invalid_input_with_a_code(kernel: Any) -> None:
    key = {"Idempotency-Key": "shape-1"}
    async with http_client(kernel) as client:
        unknown = await client.post("/v1/tools/predict", json={"model": "simulation", "colour": "red"}, headers=key)
        wrong = await client.post(
            "/v1/tools/predict", json={"model": "simulation", "time_limit_s": "soon"}, headers=key
        )
        missing = await client.post("/v1/tools/predict", json={}, headers=key)
        kind = await client.post(
            "/v1/tools/predict", json=with_sim(variables=[{"id": "d", "distribution": {"kind": "gamma"}}]), headers=key
        )
    assert unknown.status_code == 400 and unknown.json()["error"] == "invalid_input"
    assert unknown.json()["code"] == "unknown_field" and unknown.json()["details"][0]["field"] == "colour"
    assert wrong.json()["error"] == "invalid_input" and wrong.json()["code"] == "bad_value"
    assert missing.json()["error"] == "invalid_input" and missing.json()["code"] == "missing_field"
    assert kind.status_code == 400 and kind.json()["error"] == "invalid_input"
    assert await count_quotes(kernel) == 0


def test_shape_errors_name_every_nested_field() -> None:
    """Tagged distributions, lists and optional fields: each wrong one is named with its path."""
    from tollway.testing import convert_input as convert

    body = copy.deepcopy(SIM)
    sim = body["simulation"]
    sim["variables"][0]["distribution"]["sd"] = "wide"
    sim["variables"][1]["distribution"] = {"kind": "pareto", "alpha": 2}
    del sim["variables"][2]["distribution"]["kind"]
    sim["outputs"][2] = {"id": "loss"}
    sim["seed"] = 1.5
    sim["percentiles"] = [5, "median"]
    with pytest.raises(Refusal) as err:
        convert(body, PredictRequest, error="invalid_input")
    assert err.value.code == "invalid_input" and err.value.extra["code"] == "bad_value"
    kinds = '"fixed", "uniform", "normal", "lognormal", "triangular", "bernoulli" or "discrete"'
    assert err.value.details == [  # in the order the body gives them
        {"field": "simulation.seed", "message": "simulation.seed must be a whole number or null"},
        {"field": "simulation.percentiles[1]", "message": "simulation.percentiles[1] must be a number"},
        {
            "field": "simulation.variables[0].distribution.sd",
            "message": "simulation.variables[0].distribution.sd must be a number of at most 1000000000000000",
        },
        {
            "field": "simulation.variables[1].distribution.kind",
            "message": f"simulation.variables[1].distribution.kind must be one of {kinds}",
        },
        {
            "field": "simulation.variables[2].distribution.kind",
            "message": f"simulation.variables[2].distribution.kind is required (one of {kinds})",
        },
        {
            "field": "simulation.outputs[2].expression",
            "message": "simulation.outputs[2].expression is required (a string)",
        },
    ]
    assert err.value.message.startswith("6 fields are invalid: simulation.seed, simulation.percentiles[1], ")
