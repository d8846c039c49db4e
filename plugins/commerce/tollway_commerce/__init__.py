"""Tollway's agent commerce: the Agentic Commerce Protocol, as a merchant (docs/commerce.md)."""
