"""Signed webhooks sent from an outbox by the workers, retried with growing delay (docs/webhooks.md)."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("migrations", "outbox", "signing", "tables", "targets")
