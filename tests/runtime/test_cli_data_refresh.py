"""`tollway data refresh` and the sanctions download at start, through the real
command: failures are one clear line and a non-zero exit, never a traceback; a
start of `tollway serve` attempts the download once (not once by the plugin's
start-up and again by the scheduler's first run)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.serve_process import run_cli, tollway_serve
from tests.support.serving import serve_app

UNREACHABLE = "http://127.0.0.1:9/"  # the discard port: nothing listens, the connection is refused


def home(tmp_path) -> dict[str, str]:
    return {"TOLLWAY_HOME": str(tmp_path / "home"), "TOLLWAY_OPERATOR_TOKEN": "test-operator-token"}


async def test_refresh_with_no_network_fails_in_one_line_naming_the_url(tmp_path):
    for args in (("data", "refresh"), ("data", "refresh", "sanctions")):
        code, _, err = await run_cli(
            *args, env={**home(tmp_path), "TOLLWAY_SANCTIONS_LISTS_URL": UNREACHABLE}, cwd=tmp_path
        )
        assert code == 1, err
        assert "Traceback" not in err and "Task exception" not in err, err
        failed = [line for line in err.splitlines() if "FAILED" in line]
        assert len(failed) == 1 and failed[0].startswith("sanctions: FAILED: could not load from http://127.0.0.1:9"), (
            err
        )
        assert "TOLLWAY_SANCTIONS_LISTS_URL" in failed[0]
    assert not (tmp_path / "home" / "sanctions" / "sdn").exists()


async def test_refresh_of_an_unknown_source_names_the_known_ones(tmp_path):
    code, out, err = await run_cli(
        "data",
        "refresh",
        "no-such-source",
        env={**home(tmp_path), "TOLLWAY_SANCTIONS_LISTS_URL": UNREACHABLE},
        cwd=tmp_path,
    )
    assert code == 2
    assert err.strip() == "tollway: no data source 'no-such-source' (known: sanctions)", err
    assert out == ""


async def test_refresh_with_a_bad_setting_is_one_line(tmp_path):
    code, _, err = await run_cli("data", "refresh", env={**home(tmp_path), "TOLLWAY_NETWORK": "moon"}, cwd=tmp_path)
    assert code == 2
    assert (
        "Traceback" not in err
        and err.strip() == "tollway: data refresh: TOLLWAY_NETWORK must be local, base-sepolia or base"
    ), err


def counting_lists_server(seen: list[str]) -> Any:
    """An OFAC stand-in that counts the files asked for and answers 503 to each."""

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"down for maintenance"})

    return app


async def test_serve_attempts_the_download_once_at_start(tmp_path):
    seen: list[str] = []
    async with serve_app(counting_lists_server(seen)) as lists_url:
        env = {**home(tmp_path), "TOLLWAY_SANCTIONS_LISTS_URL": lists_url}
        async with tollway_serve(env, cwd=tmp_path) as served:
            for _ in range(100):  # the start-up download runs in the background: wait for it
                if "/cons_prim.csv" in seen:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(2.0)  # time for a second attempt (the scheduler starts with the app)
    assert seen.count("/sdn.csv") == 1, seen
    assert seen.count("/cons_prim.csv") == 1, seen
    warnings = [line for line in served.stderr if "not refreshed" in line]
    assert len(warnings) == 2, served.stderr  # one per list, once
    assert any("OFAC SDN List" in w and "503" in w for w in warnings)
    assert "Traceback" not in "".join(served.stderr)


async def test_scheduler_holds_the_first_run_of_a_task_declared_not_at_start():
    from tollway._core.plugin_api.periodic import PeriodicTask
    from tollway._runtime.scheduler import Scheduler

    runs: list[str] = []

    async def record(name: str) -> None:
        runs.append(name)

    tasks = [
        PeriodicTask("at_start", 0.4, lambda services: record("at_start")),
        PeriodicTask("later", 0.4, lambda services: record("later"), run_at_start=False),
    ]
    scheduler = Scheduler(tasks, services=None)
    scheduler.start()
    await asyncio.sleep(0.2)
    first = list(runs)
    await asyncio.sleep(0.4)
    await scheduler.stop()
    assert first == ["at_start"]
    assert runs.count("later") == 1 and runs.count("at_start") == 2
