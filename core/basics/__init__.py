"""What every area stands on: errors, exact money, ids, canonical JSON, Keccak-256, the caller, request and answer, input validation, events."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = (
    "caller",
    "canonical",
    "errors",
    "events",
    "ids",
    "json_depth",
    "json_values",
    "keccak",
    "money",
    "redaction",
    "request",
    "sentences",
    "source_values",
    "validation",
)
