"""Watches: the resource, the sources that detect changes, and the delivery that charges
each change once (docs/watches.md)."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("delivery", "migrations", "polling", "queue", "resource", "resume", "routes", "sources", "tables")
