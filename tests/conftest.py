"""Kernel and front tests. Fixtures come from `tollway.testing` (loaded by pytest's addopts)."""
