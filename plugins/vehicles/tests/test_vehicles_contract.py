"""The kernel's contract suite (`tollway.testing.PluginContract`) run on this plugin,
on SQLite and on PostgreSQL, exactly as every third-party plugin runs it.

The file name carries the family: pytest imports test modules by base name, so two
plugins' `test_contract.py` would collide when the repository runs them together.
"""

from __future__ import annotations

from tollway.testing import PluginContract


class TestVehiclesContract(PluginContract):
    plugin = "tollway_vehicles"
