"""Fixtures: every test pretends today is `sam_replay.TODAY`, so the default posted
windows (the tool's last 30 days, the watch source's 364 days) are fixed dates; `logs`
captures every log line, the HTTP client's included."""

from __future__ import annotations

import pytest
from sam_replay import TODAY, hear_everything

from tollway_solicitations import sam


@pytest.fixture(autouse=True)
def fixed_today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sam, "today", lambda: TODAY)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    hear_everything(caplog)
    return caplog
