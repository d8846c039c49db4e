"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin,
on SQLite and on PostgreSQL, exactly as every third-party plugin runs it.

The example inputs are a public URL and a query: the unpaid call is answered 402
before any fetch or search, so the suite never reaches the network. (The file name carries the family:
pytest imports test modules by base name across the repository.)
"""

from __future__ import annotations

from tollway.testing import PluginContract


class TestWebContract(PluginContract):
    plugin = "tollway_web"
    # web_search needs a search provider to get as far as a quote (never reached: the
    # suite's calls stop at the quote or earlier)
    env = {"TOLLWAY_SEARCH_PROVIDER": "searxng", "TOLLWAY_SEARCH_SEARXNG_URL": "http://127.0.0.1:9"}
