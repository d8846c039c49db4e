"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin,
on SQLite and on PostgreSQL, exactly as every third-party plugin runs it.

The example input is a public URL: the unpaid call is answered 402 before any
fetch, so the suite never reaches the network. (The file name carries the family:
pytest imports test modules by base name across the repository.)
"""
from __future__ import annotations

from tollway.testing import PluginContract


class TestWebContract(PluginContract):
    plugin = "tollway_web"
