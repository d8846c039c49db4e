"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin, on
SQLite and on PostgreSQL. The tool needs a configured `mail` provider to be quoted, so the
suite's kernel gets stand-in values for the `lob` provider's required settings (no job
runs, so nothing is sent anywhere); without them it must answer 503 before any quote."""

from __future__ import annotations

from postal_lob_standin import API_KEY, SENDER

from tollway.testing import PluginContract


class TestPostalContract(PluginContract):
    plugin = "tollway_postal"
    env = {"TOLLWAY_MAIL_LOB_API_KEY": API_KEY, **SENDER}
