"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin, on
SQLite and on PostgreSQL, with a stand-in SAM.gov API key (the tool requires one; the
suite also checks the refusal without it)."""

from __future__ import annotations

from sam_replay import KEY_ENV

from tollway.testing import PluginContract


class TestSolicitationsContract(PluginContract):
    plugin = "tollway_solicitations"
    env = KEY_ENV
