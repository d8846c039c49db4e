"""Tollway's souls marketplace: agents selling services to agents (docs/souls.md)."""
