"""A plugin's tests run from its own folder, as its own project: `pytest` in
plugins/banks takes that folder's settings (rootdir, `-p tollway.testing`), and
passes with the repository's `tests` package impossible to import."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tollway.testing import PG_ENV

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "banks"
# `import tests` (or anything under it) raises ImportError in this interpreter
NO_TESTS_PACKAGE = "import sys; sys.modules['tests'] = None; import pytest; raise SystemExit(pytest.main(sys.argv[1:]))"


def test_a_plugins_tests_pass_from_its_folder_without_the_repository_tests_package() -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    assert env.get(PG_ENV), f"{PG_ENV} must be set: the contract suite runs on PostgreSQL too"
    run = subprocess.run(
        [sys.executable, "-c", NO_TESTS_PACKAGE, "-p", "no:cacheprovider", "-rA", "-k", "(Surface or bad_input or quote) and not postgres"],
        cwd=PLUGIN, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert re.search(rf"^rootdir: {re.escape(str(PLUGIN))}$", run.stdout, flags=re.M), output
    assert "configfile: pyproject.toml" in run.stdout, output
    passed = set(re.findall(r"^PASSED (\S+)", run.stdout, flags=re.M))
    assert "tests/test_banks_surface.py::TestBanksSurface::test_openapi_surface[sqlite]" in passed, output
    assert "tests/test_banks_surface.py::TestBanksSurface::test_mcp_surface[sqlite]" in passed, output
    assert any(p.startswith("tests/test_banks_contract.py::") for p in passed), output
    assert not re.search(r"\b(failed|errors?|skipped)\b", run.stdout.splitlines()[-1]), output


def test_without_the_tests_package_the_repository_conftest_cannot_load() -> None:
    """The check above has teeth: the repository's own settings load tests.support.boundary."""
    run = subprocess.run(
        [sys.executable, "-c", NO_TESTS_PACKAGE, "-p", "no:cacheprovider", "--collect-only", "-q", "tests/kernel/test_public_package.py"],
        cwd=REPO, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode != 0
    assert "tests.support.boundary" in run.stdout + run.stderr
