"""Plugin settings: what a plugin declares through `register_settings`.

A setting of family `vehicles` named `nhtsa_api_url` is read from the environment
variable `TOLLWAY_VEHICLES_NHTSA_API_URL` (docs/settings.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class Setting:
    family: str
    name: str
    default: str | None
    description: str
    # A credential (an API key): its value is never logged, listed or put in an answer.
    secret: bool = False

    @property
    def env_var(self) -> str:
        return f"TOLLWAY_{self.family.upper()}_{self.name.upper()}"


def setting_value(settings: Mapping[str, str], key: Setting | str, default: str | None = None) -> str | None:
    """A family's setting by name, trimmed; a blank or absent value falls back to the
    `Setting`'s own default (when `key` is one), then to `default`.

    `settings` is what the kernel hands a tool (`ToolContext.settings`) or a hook
    (`PluginContext.settings(family)`): values by setting name, read from the
    `TOLLWAY_<FAMILY>_<NAME>` variables. Plugins never read the environment themselves.
    """
    name = key.name if isinstance(key, Setting) else key
    value = settings.get(name)
    if value is not None and value.strip():
        return value.strip()
    if isinstance(key, Setting) and key.default is not None:
        return key.default
    return default
