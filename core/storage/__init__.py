"""Storage every area shares: the engine the tables are bound to, the statement helper for
hand-written SQL, what migrations share, and the frozen migrations of the one-app releases."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("kernel_history", "migration_steps", "sql", "tables")
