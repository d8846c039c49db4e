"""What a plugin declares and is handed: `Tool`, `Route`, hooks, settings, data sources, periodic tasks, upstream registries, providers, the plugin context."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = (
    "context",
    "datasources",
    "decorator",
    "evidence",
    "hookspecs",
    "operator_pages",
    "periodic",
    "providers",
    "query_params",
    "route_shapes",
    "routes",
    "settings_spec",
    "tool",
    "tool_declarations",
    "upstream",
    "upstream_cache",
)
