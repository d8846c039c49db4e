"""What the operator looks at beside the money: the plugins installed, their tools and routes, and the providers' settings and health."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("installed",)
