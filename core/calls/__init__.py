"""Running a call: the paid-call pipeline, pricing before payment, idempotency, rate limits, the tool runner, calls made for an agent."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = (
    "delegated",
    "idempotency",
    "migrations",
    "pipeline",
    "prepare",
    "rate_identity",
    "ratelimits",
    "tool_runner",
)
