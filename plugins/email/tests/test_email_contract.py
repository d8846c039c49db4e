"""The kernel's contract suite (`tollway.testing.PluginContract`) run on the email tool, on
SQLite and on PostgreSQL, with a relay configured (nothing is sent: the suite stops at the quote)."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestEmailContract(PluginContract):
    plugin = "tollway_email"
    env = {
        "TOLLWAY_EMAIL_HOST": "127.0.0.1",
        "TOLLWAY_EMAIL_PORT": "9",
        "TOLLWAY_EMAIL_SECURITY": "none",
        "TOLLWAY_EMAIL_FROM_ADDRESS": "agents@tollway.test",
    }
