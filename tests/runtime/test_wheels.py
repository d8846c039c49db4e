"""`make wheels`: one wheel per distribution (the root `tollway` and every plugin) in `dist/`,
each with what an install from an index needs (the plugin template, the entry points)."""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _distributions() -> dict[str, Path]:
    """Each pyproject's project name (normalized as wheel file names spell it) and its folder."""
    folders = [REPO, *sorted(p.parent for p in REPO.glob("plugins/*/pyproject.toml"))]
    return {tomllib.loads((f / "pyproject.toml").read_text())["project"]["name"].replace("-", "_"): f for f in folders}


def test_make_wheels_builds_every_distribution_into_dist(made_wheels: Path) -> None:
    dist = made_wheels  # `make wheels` in a copy of the checkout (tests/runtime/conftest.py)
    wheels = {path.name.split("-")[0]: path for path in dist.glob("*.whl")}
    distributions = _distributions()
    assert set(wheels) == set(distributions)
    assert len(list(dist.glob("*.whl"))) == len(distributions)  # one each

    with zipfile.ZipFile(wheels["tollway"]) as root:
        names = set(root.namelist())
    # The template ships inside the `tollway` package (tollway/plugin_template links to it).
    assert "tollway/plugin_template/pyproject.toml" in names
    # The internal folders are private subpackages of `tollway`: no generic top-level names.
    assert {
        "tollway/_core/__init__.py",
        "tollway/_runtime/cli.py",
        "tollway/_http_server/__init__.py",
        "tollway/_mcp_server/__init__.py",
    } <= names
    for wheel_path in wheels.values():
        with zipfile.ZipFile(wheel_path) as wheel:
            tops = {n.split("/")[0] for n in wheel.namelist() if not n.split("/")[0].endswith((".dist-info", ".data"))}
        assert all(top.startswith("tollway") for top in tops), (wheel_path.name, tops)
    for name, folder in distributions.items():
        if name == "tollway":
            continue
        with zipfile.ZipFile(wheels[name]) as wheel:
            entry_points = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
            text = wheel.read(entry_points).decode()
        declared = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["entry-points"]["tollway"]
        assert "[tollway]" in text, name
        for entry, target in declared.items():
            assert f"{entry} = {target}" in text, name
