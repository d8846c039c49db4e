"""An agent's own email address at the service's sending domain: the sending address tagged
with the agent (`agents+a<agent id without dashes>@example.com`). What the service sends for
an agent carries it, so replies come back and name their agent; one scheme for every plugin."""

from __future__ import annotations

import re

_AGENT_TAG = re.compile(r"^[^@+]+\+a([0-9a-f]{32})@", re.I)


def agent_address(from_address: str, agent_id: str) -> str:
    local, _, domain = from_address.partition("@")
    return f"{local}+a{agent_id.replace('-', '').lower()}@{domain}" if domain else from_address


def agent_of_address(address: str) -> str | None:
    """The agent id an address is tagged with, or None."""
    found = _AGENT_TAG.match(address)
    if found is None:
        return None
    h = found.group(1).lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
