"""Tollway's `email` provider: SMTP submission to any relay (docs/providers.md)."""
