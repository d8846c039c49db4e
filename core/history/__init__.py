"""History over recorded lookups: the fact store, its diff engine, and the Changes and
Benchmark tools that read it (docs/history.md)."""
