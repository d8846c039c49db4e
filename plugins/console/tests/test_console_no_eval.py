"""The vendored htmx has an `eval` path (its `hx-on`/`js:` expressions): the console turns it
off twice, in htmx's own configuration and by a CSP without 'unsafe-eval'."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tollway_console.pages import CSP

TEMPLATES = Path(__file__).resolve().parents[1] / "tollway_console" / "templates"


def test_no_page_may_evaluate_script_text():
    assert "unsafe-eval" not in CSP and "unsafe-inline" not in CSP
    assert re.search(r"script-src 'self'(;|$)", CSP)
    meta = re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", (TEMPLATES / "base.html").read_text())
    config = json.loads(meta.group(1))
    assert config["allowEval"] is False and config["allowScriptTags"] is False
