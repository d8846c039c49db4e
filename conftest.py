"""Loaded for every test in the repository (the kernel's `tests/` and each plugin's
`tests/`): the repository-boundary audit, so a test that reads a file a fresh clone
does not have fails (see tests/support/boundary.py); and no `.env` file is read by the
suite or the processes it starts (a developer's settings must not leak into tests)."""

import os

os.environ["TOLLWAY_DOTENV"] = "0"  # runtime/settings.py: read no .env file

pytest_plugins = ["tests.support.boundary"]
