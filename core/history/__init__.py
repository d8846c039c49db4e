"""History over recorded lookups: the fact store, its diff engine, and the Changes and
Benchmark tools that read it (docs/history.md)."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("declare", "keys", "migrations", "series", "store", "tables", "tools")
