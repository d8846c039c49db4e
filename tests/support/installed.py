"""The kernel's test plugins as an installed distribution, for `tollway serve` and
`tollway mcp` children: they load plugins from `tollway` entry points only, so a
folder with a `.dist-info` naming ours is put on the child's PYTHONPATH."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tests.support.lookup_plugin import LookupPlugin

REPO = Path(__file__).resolve().parents[2]

# entry-point name -> the plugin object it loads (`module:attribute`)
ECHO = EchoPlugin()
JOBS = JobsPlugin()
LOOKUP = LookupPlugin()
ENTRY_POINTS = {
    "tollway_test_echo": "tests.support.installed:ECHO",
    "tollway_test_jobs": "tests.support.installed:JOBS",
    "tollway_test_lookup": "tests.support.installed:LOOKUP",
}


def write_plugins_site(folder: Path) -> Path:
    """Write a distribution exposing the test plugins' entry points into `folder`; returns it."""
    dist = folder / "tollway_kernel_test_plugins-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tollway-kernel-test-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[tollway]\n" + "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    )
    return folder


def with_test_plugins(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`env` for a child that also loads the test plugins (and can import them from the repository)."""
    site = write_plugins_site(tmp_path / "test-plugins-site")
    paths = [
        str(site),
        str(REPO),
        *filter(None, env.get("PYTHONPATH", os.environ.get("PYTHONPATH", "")).split(os.pathsep)),
    ]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}
