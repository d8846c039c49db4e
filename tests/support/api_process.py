"""An API process for the crash tests: `python -m tests.support.api_process PORT`.

It builds the kernel from the TOLLWAY_* environment with the test job tools
(tests/support/jobs_plugin.py) and the installed plugins named in TOLLWAY_TEST_INSTALLED
(comma-separated entry-point names), serves the HTTP app with uvicorn on
127.0.0.1:PORT with the scheduler (so the reconciler runs at start and then
periodically), and prints "ready" once it listens. Tests kill it with SIGKILL.
"""

from __future__ import annotations

import os
import sys

import uvicorn

from tests.support.jobs_plugin import CrashPlugin, JobsPlugin
from tollway._runtime.proxies import uvicorn_proxy_options
from tollway._runtime.service import build_kernel, http_app
from tollway._runtime.settings import load_settings


class _Announcing(uvicorn.Server):
    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        print("ready", flush=True)


def main() -> None:
    port = int(sys.argv[1])
    settings = load_settings()
    kernel = build_kernel(
        settings,
        plugins=[("jobs", JobsPlugin()), ("crash", CrashPlugin())],
        load_installed=False,
        strict_plugins=True,
    )
    installed = {name for name in os.environ.get("TOLLWAY_TEST_INSTALLED", "").split(",") if name}
    if installed:
        from tollway._runtime.plugins import load_entry_point_plugins

        load_entry_point_plugins(kernel, strict=True, only=installed)
    app = http_app(kernel, workers=0, scheduler=True)
    options = uvicorn_proxy_options(settings.trusted_proxies)
    _Announcing(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, **options)
    ).run()


if __name__ == "__main__":
    main()
