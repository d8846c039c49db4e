"""Money held for agents: the ledger, holds, refunds, top-ups, payouts, sales, the ledger check, the reconciler, and the account routes (balance, top-up, sign-in, the operator's)."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = (
    "account_routes",
    "accounts",
    "holds",
    "ledger",
    "ledger_check",
    "migrations",
    "payouts",
    "reconciler",
    "refunds",
    "sales",
    "tables",
    "top_ups",
)
