"""`tollway new-plugin` and plugin_template/: a rendered plugin installs and passes
the kernel's contract suite, exactly as a third party's would.

The rendered plugin is installed into a temporary folder (never into the shared
virtual environment) and its own tests run in a subprocess with that folder on
PYTHONPATH, so its entry point is found the way an installed plugin's is.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tollway._runtime.cli import main
from tollway._runtime.template import TemplateError, default_target, render_plugin, repository_root, template_dir
from tollway.testing import PG_ENV, PluginContract, PluginSurface

REPO = Path(__file__).resolve().parents[2]
FAMILY = "weather"
RENDERED_FILES = {
    "README.md",
    "pyproject.toml",
    "tollway_weather/__init__.py",
    "tollway_weather/plugin.py",
    "tollway_weather/tool.py",
    "tollway_weather/registry.py",
    "tests/test_weather_contract.py",
    "tests/test_weather_tool.py",
    "tests/test_weather_surface.py",
    "tests/test_weather_registry.py",
    "tests/conftest.py",
    "tests/fixtures/README.md",
    "tests/fixtures/pypi_httpx.json",
    "tollway_weather/temperature.py",
    "tests/test_weather_temperature.py",
}
CONTRACT_TESTS = sorted(name for name in dir(PluginContract) if name.startswith("test_"))
SURFACE_TESTS = sorted(name for name in dir(PluginSurface) if name.startswith("test_"))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("new_plugin")


@pytest.fixture(scope="module")
def rendered(workdir: Path) -> Path:
    target = workdir / FAMILY
    assert main(["new-plugin", FAMILY, "--dir", str(target)]) == 0
    return target


def _files(root: Path) -> set[str]:
    """Files under `root`, less what building a wheel in place leaves behind."""
    files = set()
    for path in root.rglob("*"):
        parts = path.relative_to(root).parts
        if path.is_file() and parts[0] != "build" and not parts[0].endswith(".egg-info"):
            files.add("/".join(parts))
    return files


def test_template_is_found_from_the_repository() -> None:
    assert repository_root() == REPO
    assert template_dir() == REPO / "plugin_template"
    assert default_target(FAMILY) == REPO / "plugins" / FAMILY


def test_rendered_plugin_has_every_file_with_placeholders_replaced(rendered: Path) -> None:
    assert _files(rendered) == RENDERED_FILES
    for rel in RENDERED_FILES:
        text = (rendered / rel).read_text()
        assert "{{" not in text and "}}" not in text, rel
        if rel.endswith(".py"):
            ast.parse(text, filename=rel)
        if rel.endswith(".json"):
            json.loads(text)
    project = tomllib.loads((rendered / "pyproject.toml").read_text())
    assert project["project"]["name"] == "tollway-weather"
    assert project["project"]["entry-points"]["tollway"] == {"tollway_weather": "tollway_weather.plugin"}
    tool = (rendered / "tollway_weather/tool.py").read_text()
    assert 'name="weather_text_stats"' in tool and "class WeatherTextStatsInput(" in tool
    assert "TOLLWAY_WEATHER_STOP_WORDS" in (rendered / "README.md").read_text()


def _summary_counts(output: str) -> dict[str, int]:
    """Counts from pytest's closing line, e.g. `23 passed, 2 failed in 5.01s`."""
    closing = [line for line in output.splitlines() if re.search(r"\bin \d+(\.\d+)?s\b", line)]
    assert closing, output
    return {
        word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)", closing[-1])
    }


def test_rendered_plugin_installs_and_passes_the_contract_suite(rendered: Path, workdir: Path) -> None:
    site = workdir / "site"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env.pop("PYTHONPATH", None)
    # No build isolation and no index: it builds with the venv's setuptools, offline.
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(rendered)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    entry_points = (site / "tollway_weather-0.1.0.dist-info" / "entry_points.txt").read_text()
    assert "[tollway]" in entry_points and "tollway_weather = tollway_weather.plugin" in entry_points

    # Run from the temporary folder so `tollway_weather` imports from the installed
    # copy, and without `-p tollway.testing` or `--snapshot-update`: the rendered pyproject
    # must supply the one and make the first run write the snapshots.
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    admin_url = env.pop(PG_ENV, None)
    assert admin_url, f"{PG_ENV} must be set: the contract suite runs on PostgreSQL too"
    snapshots = rendered / "tests" / "__snapshots__" / "test_weather_surface.ambr"
    assert not snapshots.exists()

    def pytest_run(*args: str, **extra_env: str) -> tuple[subprocess.CompletedProcess[str], str, dict[str, int]]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *args],
            cwd=workdir, env={**env, **extra_env}, capture_output=True, text=True,
        )  # fmt: skip
        output = done.stdout + done.stderr
        return done, output, _summary_counts(output)

    # At once, with no database configured: the SQLite half passes, the PostgreSQL half is
    # skipped saying how to run it, and the surface snapshots are written.
    first, output, counts = pytest_run(str(rendered / "tests"))
    assert first.returncode == 0, output
    assert set(counts) == {"passed", "skipped"}, output
    skipped = re.findall(r"^SKIPPED \[(\d+)\] .*?: (.*)$", first.stdout, flags=re.M)
    assert sum(int(n) for n, _ in skipped) == counts["skipped"], output
    assert all(PG_ENV in reason and "no PostgreSQL configured" in reason for _, reason in skipped), output
    passed_first = set(re.findall(r"^PASSED (\S+)", first.stdout, flags=re.M))
    assert passed_first and not any(p.endswith("[postgres]") for p in passed_first), output
    assert "snapshots generated" in output and snapshots.exists(), output

    # With PostgreSQL: everything passes, nothing is skipped; the PostgreSQL surface
    # snapshots are written, the SQLite ones compared.
    run, output, counts = pytest_run(str(rendered / "tests"), **{PG_ENV: admin_url})
    assert run.returncode == 0, output
    assert set(counts) == {"passed"}, output  # nothing failed, errored or skipped
    passed = set(re.findall(r"^PASSED (\S+)", run.stdout, flags=re.M))
    assert len(passed) == counts["passed"]
    assert passed_first < passed
    contract = "tests/test_weather_contract.py::TestWeatherContract::"
    expected = {f"{contract}{name}[{db}]" for name in CONTRACT_TESTS for db in ("sqlite", "postgres")}
    surface = "tests/test_weather_surface.py::TestWeatherSurface::"
    expected |= {f"{surface}{name}[{db}]" for name in SURFACE_TESTS for db in ("sqlite", "postgres")}
    missing = {e for e in expected if not any(p.endswith(e) for p in passed)}
    assert not missing, output
    assert any(p.endswith("test_weather_tool.py::test_paid_call_through_the_kernel[postgres]") for p in passed)
    assert any(p.endswith("test_weather_registry.py::test_replayed_answer_is_read") for p in passed)
    assert any(
        p.endswith("test_weather_temperature.py::test_paid_from_credits_through_the_kernel[postgres]") for p in passed
    )
    assert counts["passed"] > len(expected)  # the plugin's own tool tests ran too
    written = snapshots.read_text()
    assert "'/v1/tools/" in written and "'name': 'weather_text_stats'" in written
    assert written.count("[sqlite]") == written.count("[postgres]") == len(SURFACE_TESTS)

    # A snapshot that exists is compared, never rewritten: a changed surface fails.
    snapshots.write_text(written.replace("'name': 'weather_text_stats'", "'name': 'weather_renamed'"))
    changed, output, counts = pytest_run(str(rendered / "tests" / "test_weather_surface.py"), "-k", "sqlite")
    assert changed.returncode == 1 and counts.get("failed"), output
    assert "weather_renamed" in snapshots.read_text()


@pytest.mark.parametrize(
    "name", ["Weather", "9lives", "air-quality", "air quality", "_weather", "weather_", "air__quality", "x" * 41, ""]
)
def test_new_plugin_refuses_a_bad_name(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out"
    assert main(["new-plugin", name, "--dir", str(target)]) == 2
    assert "plugin name" in capsys.readouterr().err
    with pytest.raises(TemplateError, match="plugin name"):
        render_plugin(name, target)
    assert not target.exists()


def test_new_plugin_refuses_an_existing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "weather"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    assert main(["new-plugin", FAMILY, "--dir", str(target)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert _files(target) == {"keep.txt"} and (target / "keep.txt").read_text() == "mine"


def test_new_plugin_refuses_a_taken_plugin_name(capsys: pytest.CaptureFixture[str]) -> None:
    """plugins/vehicles exists and `tollway_vehicles` is installed: nothing is written."""
    vehicles = REPO / "plugins" / "vehicles"
    before = {name: (vehicles / name).read_bytes() for name in ("pyproject.toml", "README.md")}
    assert main(["new-plugin", "vehicles"]) == 2
    assert "vehicles" in capsys.readouterr().err
    assert {name: (vehicles / name).read_bytes() for name in before} == before
    assert not (vehicles / "tollway_vehicles" / "tool.py").read_text().count("text_stats")


def test_new_plugin_renders_into_an_empty_folder_with_a_multi_word_name(tmp_path: Path) -> None:
    assert main(["new-plugin", "air_quality", "--dir", str(tmp_path)]) == 0
    tool = (tmp_path / "tollway_air_quality" / "tool.py").read_text()
    assert 'name="air_quality_text_stats"' in tool and "class AirQualityTextStatsInput(" in tool
    assert "TOLLWAY_AIR_QUALITY_STOP_WORDS" in tool
    decorated = (tmp_path / "tollway_air_quality" / "temperature.py").read_text()
    assert "async def air_quality_temperature(" in decorated and "class AirQualityTemperature(" in decorated
