"""Kernel and front tests. Fixtures come from `core.testing` (loaded by pytest's addopts)."""
