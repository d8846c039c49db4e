"""A copy of the repository as a fresh clone of this working tree would have it, and
the small process helpers the set-up tests share."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx


def copy_checkout(repo: Path, dest: Path) -> Path:
    """Tracked files and new ones git does not ignore (links kept as links), copied to `dest`."""
    names = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=repo,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, names):
        src, out = repo / name, dest / name
        if not (src.is_symlink() or src.is_file()):
            continue  # deleted in the working tree
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        else:
            shutil.copy2(src, out)
    return dest


def clean_env(**env: str) -> dict[str, str]:
    """This process's environment less Tollway's settings, the virtualenv and make's own, plus `env`."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    base = {
        k: v for k, v in os.environ.items() if (not k.startswith("TOLLWAY_") or k == "TOLLWAY_DOTENV") and k not in drop
    }
    base.update(env)
    return base


def wait_until(check, timeout_s: float, what: str, log: Path | None = None):
    """Call `check()` until it returns something truthy; fail after `timeout_s` with the log."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = check()
        except httpx.TransportError:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log and log.exists() else ""
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s\n{tail}")
        time.sleep(0.25)
