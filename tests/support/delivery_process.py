"""A watch delivery process for the fault test: `python -m tests.support.delivery_process`.

It builds the kernel from the TOLLWAY_* environment and delivers pending watch
changes; with TEST_KILL_AFTER_CHARGE=1 it SIGKILLs itself the moment the first
delivery's transaction (charge, receipt, notification, outbox row) has committed —
before any webhook could be sent.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tollway._runtime.service import build_kernel
from tollway._runtime.settings import load_settings


async def main() -> None:
    kernel = build_kernel(load_settings(), load_installed=False, strict_plugins=True, worker_only=True)
    await kernel.start()

    def after_commit(outcome) -> None:
        if outcome.kind == "delivered" and os.environ.get("TEST_KILL_AFTER_CHARGE") == "1":
            os.kill(os.getpid(), signal.SIGKILL)

    kernel.watch_deliveries.after_commit = after_commit
    print("ready", flush=True)
    delivered = await kernel.watch_deliveries.run_pending()
    print(f"delivered {delivered}", flush=True)
    await kernel.stop()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
