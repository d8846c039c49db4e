"""Receipts: issuing, signing and re-signing, listing and value tags."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("analytics", "migrations", "receipt_signing", "receipts", "tables", "value_tags")
