"""docs/limits.md's table of rate-limit categories names the tools that exist: every tool
every plugin of this repository registers, each under the category it declares, and
no tool that is not registered."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "limits.md"
ALL_PLUGINS = {f"tollway_{p.name}" for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file()}
ROW = re.compile(r"^\| `(paid|expensive|free_read|lookup)` \| [^|]+ \| (.+) \|$", re.M)


def documented() -> dict[str, set[str]]:
    """Category -> the names written in backticks in its row (only tool names are; paths hold a `/`)."""
    table = PAGE.read_text().split("### Categories", 1)[1].split("###", 1)[0]
    return {category: set(re.findall(r"`([a-z_]+)`", used_by)) for category, used_by in ROW.findall(table)}


async def test_the_categories_table_names_exactly_the_registered_tools(kernel_factory) -> None:
    kernel = await kernel_factory(installed=ALL_PLUGINS)
    rows = documented()
    assert set(rows) == {"paid", "expensive", "free_read", "lookup"}
    for category, names in rows.items():
        tools = {t.name for t in kernel.tools.values() if t.rate_limit == category}
        assert names == tools, category  # every tool of the category; none of another, none not registered
