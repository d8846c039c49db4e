"""Messages to and from the outside world: inbound messages, content safety, agents' own addresses."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("agent_addresses", "content_safety", "inbound", "migrations", "tables")
