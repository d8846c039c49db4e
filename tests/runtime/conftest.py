"""The set-up tests' shared build: `make wheels` runs once per session in a copy of the
checkout, for the wheel test to inspect and the author test to install Tollway from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.checkout import clean_env, copy_checkout

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"  # the Makefile installs it beside python


@pytest.fixture(scope="session")
def made_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `dist/` folder `make wheels` fills in a copy of the checkout (a copy, so the
    builds leave nothing in the working tree): one wheel per distribution."""
    assert UV.exists(), f"{UV} is missing: the Makefile installs uv into .venv (and the test extra lists it)"
    source = copy_checkout(REPO, tmp_path_factory.mktemp("wheels") / "source")
    # `UV=` is the uv of this environment: the copy has no .venv of its own.
    done = subprocess.run(
        ["make", "--no-print-directory", "wheels", f"UV={UV}"],
        cwd=source,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return source / "dist"
