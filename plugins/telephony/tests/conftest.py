"""Fixtures: `twilio`, a fresh local stand-in of Twilio's API per test (`twilio_standin`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from twilio_standin import TwilioStandIn, twilio_standin


@pytest.fixture
def twilio() -> Iterator[TwilioStandIn]:
    with twilio_standin() as standin:
        yield standin
