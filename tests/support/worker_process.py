"""A job worker process for the fault and scale tests: `python -m tests.support.worker_process`.

It builds the kernel from the TOLLWAY_* environment with the test job tools
(tests/support/jobs_plugin.py) and runs `runtime.worker.Worker` until killed.
"""

from __future__ import annotations

import asyncio
import os
import sys

from tests.support.jobs_plugin import JobsPlugin
from tollway._runtime.service import build_kernel
from tollway._runtime.settings import load_settings
from tollway._runtime.worker import Worker


async def main() -> None:
    kernel = build_kernel(
        load_settings(), plugins=[("jobs", JobsPlugin())], load_installed=False, strict_plugins=True, worker_only=True
    )
    await kernel.start()
    worker = Worker(
        kernel,
        lease_s=float(os.environ.get("TEST_WORKER_LEASE_S", "30")),
        poll_s=0.2,
        concurrency=int(os.environ.get("TEST_WORKER_CONCURRENCY", "8")),
    )
    worker.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    import uvloop  # as `tollway worker` runs

    sys.exit(uvloop.run(main()))
