"""Hook implementations: the `smtp` email provider."""
from __future__ import annotations

from collections.abc import Callable

from tollway import Provider, hookimpl

from .smtp import SMTP


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(SMTP)
