"""The kernel's contract suite, run on this plugin: it loads strictly from its entry
point, its schemas are valid, its examples validate and price the same every time,
bad input is refused before any quote, an unpaid call gets a 402 quote, and its
tools appear in the OpenAPI document. Runs on SQLite and on PostgreSQL.
"""
from __future__ import annotations

from tollway.testing import PluginContract


class Test{{Family}}Contract(PluginContract):
    plugin = "tollway_{{family}}"
