"""Who is calling: agents, access tokens (listed and revoked for the operator), EIP-712 agent proofs."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("agents", "auth", "auth_proof", "migrations", "tables", "tokens")
