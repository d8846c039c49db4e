"""The service as the paid-call bench serves it: the vehicles plugin alone, NHTSA replayed
in-process, through the app factory each process of `tollway serve --processes N` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
NO_HISTORY_ENV = "TOLLWAY_BENCH_NO_HISTORY"
LITESTAR_ONLY_ENV = "TOLLWAY_BENCH_LITESTAR_ONLY"  # tool calls through Litestar, not the lean path
HONDA = (
    ROOT
    / "plugins"
    / "vehicles"
    / "tests"
    / "fixtures"
    / "nhtsa_recalls"
    / "recallsByVehicle_honda_accord_2021_trimmed.json"
)


def replay_transport() -> httpx.MockTransport:
    """Answers NHTSA's recallsByVehicle with the real recorded Honda Accord 2021 response."""
    body = HONDA.read_bytes()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/recalls/recallsByVehicle"):
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        return httpx.Response(404, content=b"{}")

    return httpx.MockTransport(handler)


def bench_kernel(settings: Any = None) -> Any:
    """A kernel over `settings` (default: the environment's) with only the vehicles plugin
    and NHTSA replayed."""
    from tollway._runtime.plugins import load_entry_point_plugins
    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    kernel = build_kernel(settings or load_settings(), load_installed=False, http_transport=replay_transport())
    load_entry_point_plugins(kernel, strict=True, only={"tollway_vehicles"})
    return kernel


def app() -> Any:
    """One API process (uvicorn calls this in each): `runtime.service.serve_app`, the
    factory of `tollway serve --processes N`, over the bench's kernel; the job workers
    come from TOLLWAY_SERVE_JOB_WORKERS as there (the bench sets 0). With
    TOLLWAY_BENCH_LITESTAR_ONLY set, the Litestar app alone is served (the anchor of what
    the lean path of tool calls saves: `http_server/front.py`)."""
    import os

    from tollway._runtime.service import serve_app

    if os.environ.get(NO_HISTORY_ENV):  # the anchor of history's share: calls record no facts
        import tollway._core.calls.tool_runner as recorder  # where a call's facts are recorded

        async def record_nothing(*args: Any) -> None:
            return None

        if not hasattr(recorder, "record_lookup"):  # moved: the anchor would measure nothing
            raise RuntimeError("tool_runner no longer records facts through record_lookup")
        recorder.record_lookup = record_nothing
    app = serve_app(bench_kernel())
    return app.litestar if os.environ.get(LITESTAR_ONLY_ENV) else app
