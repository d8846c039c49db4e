"""The console's page in the docs shows a screenshot of every page of its navigation (the
console's own and the operator pages of the goals and souls plugins), and each file exists."""

from __future__ import annotations

import re
from pathlib import Path

from tollway_console.pages import NAVIGATION

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_every_page_has_its_screenshot_in_the_docs():
    text = (DOCS / "console.md").read_text()
    shown = {label: path for label, path in re.findall(r"^\| ([^|]+?) \| !\[[^\]]+\]\(([^)]+\.png)\) \|$", text, re.M)}
    wanted = {label for _, label in NAVIGATION} | {"Sign in", "Goals", "Marketplace"}
    assert wanted <= set(shown), sorted(wanted - set(shown))
    missing = [path for path in shown.values() if not (DOCS / path).is_file()]
    assert missing == []
