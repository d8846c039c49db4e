"""Plugin settings: what a plugin declares through `register_settings`.

A setting of family `vehicles` named `nhtsa_api_url` is read from the environment
variable `TOLLWAY_VEHICLES_NHTSA_API_URL` (docs/settings.md).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Setting:
    family: str
    name: str
    default: str | None
    description: str

    @property
    def env_var(self) -> str:
        return f"TOLLWAY_{self.family.upper()}_{self.name.upper()}"
