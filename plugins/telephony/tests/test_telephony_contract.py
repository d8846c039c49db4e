"""The kernel's contract suite (`tollway.testing.PluginContract`) run on the telephony tools,
on SQLite and on PostgreSQL, with a Twilio account configured for both kinds (nothing is
sent: the suite stops at the quote)."""

from __future__ import annotations

from tollway.testing import PluginContract

ACCOUNT = {
    "TWILIO_ACCOUNT_SID": "AC" + "0" * 32,
    "TWILIO_AUTH_TOKEN": "f" * 32,
    "TWILIO_FROM_NUMBER": "+15005550006",
    "TWILIO_API_URL": "http://127.0.0.1:9",
}


ENV = {f"TOLLWAY_{kind}_{name}": value for kind in ("SMS", "VOICE") for name, value in ACCOUNT.items()}


class TestTelephonyContract(PluginContract):
    plugin = "tollway_telephony"
    env = ENV
