"""The kernel's contract suite (`tollway.testing.PluginContract`) run on the predict
plugin, on SQLite and on PostgreSQL (its tools require an Idempotency-Key, which the
suite sends to every tool that requires one)."""

from __future__ import annotations

from tollway.testing import PluginContract


class TestPredictContract(PluginContract):
    plugin = "tollway_predict"
