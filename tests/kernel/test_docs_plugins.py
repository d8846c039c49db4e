"""docs/plugins.md's examples are real code: each ```python block of the page is part of
the worked `almanac` plugin in docs/examples/tollway_almanac, which this module imports,
serves and pays (its own tests are collected here), so an example that stops working
fails the suite."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "tollway_almanac"
PAGE = REPO / "docs" / "plugins.md"
sys.path.insert(0, str(EXAMPLE.parent))

import tollway  # noqa: E402
from tollway_almanac import day_length, holidays, plugin  # noqa: E402
from tollway_almanac.test_almanac import (  # noqa: E402,F401  (collected here)
    TestAlmanacContract,
    test_day_length_is_paid_from_credits,
    test_holidays_are_read_from_a_replayed_answer,
)

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def example_sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(EXAMPLE.glob("*.py"))}


def test_every_python_block_of_the_page_is_example_code() -> None:
    blocks = BLOCK.findall(PAGE.read_text())
    assert len(blocks) >= 5
    sources = example_sources()
    for block in blocks:
        assert any(block in text for text in sources.values()), (
            f"docs/plugins.md shows code that is not in {EXAMPLE.name}:\n{block}"
        )


def test_every_example_file_is_shown_on_the_page() -> None:
    page = PAGE.read_text()
    for name in example_sources():
        if name != "__init__.py":
            assert f"tollway_almanac/{name}" in page, f"docs/plugins.md does not mention {name}"


def test_the_short_form_builds_a_tool_from_the_signature() -> None:
    tool = day_length.almanac_day_length
    assert isinstance(tool, tollway.Tool)
    assert (tool.name, tool.family, tool.path, tool.price) == (
        "almanac_day_length",
        "almanac",
        "/v1/tools/almanac/day-length",
        1_000,
    )
    schema = tool.input_schema()
    props = schema["$defs"][schema["$ref"].rsplit("/", 1)[1]]["properties"]
    assert props["latitude"]["minimum"] == -90 and props["day_of_year"]["default"] == 172
    assert tool.description.startswith("How long the sun is up")


# geometric day lengths (no refraction): Paris at the June solstice is 15.96 h, the pole circles have polar day and night
@pytest.mark.parametrize(
    ("latitude", "day", "hours"), [(0.0, 80, 12.1), (48.85, 172, 15.96), (80.0, 172, 24.0), (80.0, 355, 0.0)]
)
async def test_day_length_answers(latitude: float, day: int, hours: float) -> None:
    answer = await day_length.almanac_day_length.run.__wrapped__(latitude=latitude, day_of_year=day)
    assert abs(answer.hours - hours) < 0.15


async def test_the_plugin_declares_its_upstream_setting_and_task(kernel_factory) -> None:
    kernel = await kernel_factory(
        plugins=[("tollway_almanac", plugin)], env={"TOLLWAY_ALMANAC_NAGER_API_URL": "http://mirror.test/v3"}
    )
    assert {"almanac_day_length", "almanac_holidays"} <= set(kernel.tools)
    assert holidays.NAGER.base_url(kernel.context.settings("almanac")) == "http://mirror.test/v3"
    assert (kernel.context.home / "almanac").is_dir()  # made by `startup`
    task = next(t for t in kernel.periodic_tasks if t.name == "almanac_tick")
    await task.run(kernel.context)
    assert (kernel.context.home / "almanac" / "last_tick").read_text().endswith("Z")
