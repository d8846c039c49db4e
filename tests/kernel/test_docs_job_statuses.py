"""docs/api.md lists the 202 `status` of every installed job tool as the tool declares it
(`Tool.accepted_status`), and no tool it does not have."""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tollway._runtime.plugins import GROUP

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ROW = re.compile(r"^\s*\| `(?P<status>[a-z]+)` \| (?P<tools>`[a-z_]+`(?:, `[a-z_]+`)*)(?: \(.*\))? \|$", re.M)


@pytest.mark.parametrize("db_kind", ["sqlite"], indirect=True)
async def test_api_md_lists_every_job_tools_acceptance_status(kernel_factory):
    kernel = await kernel_factory(installed={ep.name for ep in entry_points(group=GROUP)})
    declared = {t.name: t.accepted_status for t in kernel.tools.values() if t.mode == "job"}
    documented = {
        name: row["status"]
        for row in ROW.finditer(API.read_text())
        for name in re.findall(r"`([a-z_]+)`", row["tools"])
    }
    assert documented == declared
