"""Loaded for every test in the repository (the kernel's `tests/` and each plugin's
`tests/`): the repository-boundary audit, so a test that reads a file a fresh clone
does not have fails (see tests/support/boundary.py)."""

pytest_plugins = ["tests.support.boundary"]
