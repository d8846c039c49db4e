"""The kernel's tables and the statement helper for hand-written SQL."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("sql", "tables")
