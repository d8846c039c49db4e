"""Signed webhooks sent from an outbox by the workers, retried with growing delay (docs/webhooks.md)."""
