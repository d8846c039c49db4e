"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin, on
SQLite and on PostgreSQL, exactly as every third-party plugin runs it: website_update's
`site_id` travels in its path. Its example names a site no payer of the suite owns, so it is
refused 404 before payment and left out of the payment-flow test (the update's payment is
test_website_build's and test_website_mcp's)."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestWebsiteContract(PluginContract):
    plugin = "tollway_sites"
    examples_need_state = ("website_update",)
