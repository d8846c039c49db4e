"""The HTTP front renders exactly the declarations: with every installed plugin loaded,
each path and method the app serves is a `Tool`'s, a `Route`'s (or one of its aliases),
the MCP endpoint, the job push subscription or the OpenAPI document; and every declared
one is served and documented under its operation id."""

from __future__ import annotations

import re
from importlib.metadata import entry_points

from tollway._runtime.service import http_app
from tollway.testing import http_client

TYPED = re.compile(r"\{([a-z_][a-z0-9_]*):[a-z]+\}")
OTHERS = {("/mcp", "ASGI"), ("/v1/requests/subscribe", "WEBSOCKET")}


async def test_the_app_serves_nothing_but_tools_routes_and_their_aliases(kernel_factory):
    kernel = await kernel_factory(installed={ep.name for ep in entry_points(group="tollway")})
    declared = {(t.path, "POST"): t.name for t in kernel.tools.values()}
    for r in kernel.routes.values():
        declared[(r.path, r.method)] = r.name
        declared.update({(a.path, r.method): a.name for a in r.aliases})
    served = set()
    for route in http_app(kernel, manage_kernel=False).litestar.routes:
        path = TYPED.sub(r"{\1}", route.path)
        methods = set(getattr(route, "methods", None) or ()) - {"HEAD", "OPTIONS"} or {
            type(route).__name__.removesuffix("Route").upper()
        }
        served |= {(path, method) for method in methods}
    others = {s for s in served if s not in declared}
    assert {s for s in others if not s[0].startswith("/schema")} == OTHERS
    assert set(declared) <= served
    assert {"/healthz", "/v1/balance", "/v1/status/{request_id}", "/v1/tools/watch/{watch_id}"} <= {
        p for p, _ in declared
    }
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
    documented = {
        (path, method.upper()): op["operationId"] for path, ops in doc["paths"].items() for method, op in ops.items()
    }
    assert documented == declared
