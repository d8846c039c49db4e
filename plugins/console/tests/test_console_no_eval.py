"""The console runs no third-party script and nothing that evaluates text: its one script is
its own (static/console.js), free of eval, Function and string timers, and the CSP allows no
'unsafe-eval' nor inline script."""

from __future__ import annotations

import re
from pathlib import Path

from tollway_console.pages import CSP, STATIC_FILES

STATIC = Path(__file__).resolve().parents[1] / "tollway_console" / "static"


def test_the_console_serves_only_its_own_script_and_it_evaluates_nothing():
    scripts = [path for _, path, media in STATIC_FILES if media.startswith("text/javascript")]
    assert scripts == ["console.js"]
    assert sorted(p.name for p in STATIC.rglob("*.js")) == ["console.js"]
    source = (STATIC / "console.js").read_text()
    assert not re.search(r"\beval\s*\(|\bFunction\s*\(|set(Timeout|Interval)\s*\(\s*['\"`]", source)
    assert "'unsafe-eval'" not in CSP and "'unsafe-inline'" not in CSP
