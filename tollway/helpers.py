"""Helpers a plugin may use that are not the plugin API proper (docs/plugins.md, "Helpers"):
an agent's email address on the service and back, the public-address rule of pages
fetched for callers, and checking a receipt's signature."""

from __future__ import annotations

from tollway._core.basics.addresses import is_public_address
from tollway._core.messages.agent_addresses import agent_address, agent_of_address
from tollway._core.receipts.receipt_signing import verify_receipt

__all__ = ["agent_address", "agent_of_address", "is_public_address", "verify_receipt"]
