"""The plugins and providers page: each installed plugin with its distribution, tools and
routes, the plugins that failed to load, each provider kind's configuration (missing
settings by name) and, on demand (a POST with the session's CSRF token), every configured
provider's health check; the kernel's `Platform.installed_plugins`, `provider_status` and
`check_providers`, whose error texts come redacted."""

from __future__ import annotations

from tollway import JSONObject, Page, RouteCall

from . import sessions
from .pages import _platform, _route, render, signed_in

HERE = "/console/plugins"


def _page(call: RouteCall, session: str, health: list[JSONObject] | None) -> Page:
    platform = _platform(call)
    installed = platform.installed_plugins()
    checked = {str(h["kind"]): h for h in health or ()}
    return render(
        "plugins.html",
        csrf=sessions.csrf_for(session),
        here=HERE,
        signed_in=True,
        plugins=installed["plugins"],
        failures=installed["failures"],
        providers=platform.provider_status(),
        checked=checked,
        health_run=health is not None,
    )


async def _plugins(call: RouteCall, session: str) -> Page:
    return _page(call, session, None)


async def _check(call: RouteCall, session: str) -> Page:
    return _page(call, session, await _platform(call).check_providers())


ROUTES = (
    _route("GET", HERE, "console_plugins", "The plugins and providers", signed_in(_plugins)),
    _route(
        "POST",
        f"{HERE}/health",
        "console_check_providers",
        "Run the providers' health checks",
        signed_in(_check),
        statuses=(303, 403),
    ),
)
