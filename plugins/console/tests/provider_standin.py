"""Providers for the console's tests: a local stand-in provider's HTTP server (its health
endpoint answers 200 under `/ok`, 503 elsewhere) and a plugin declaring three kinds of
provider whose health checks ask it, each with its key in the URL's query, as some APIs want."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import tollway

LOOKUP_KEY = "lk-console-lookup-key-5c21e9"  # a secret setting's value (TOLLWAY_LOOKUP_API_KEY)
GEO_KEY = "geo-console-key-77a1f0"  # a setting not marked secret: only the URL's redaction hides it


class _StandIn(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200 if self.path.startswith("/ok/") else 503)
        self.send_header("Content-Length", "0")
        self.end_headers()


@contextlib.contextmanager
def stand_in() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1: yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _health(kind: str):
    async def check(context: tollway.PluginContext) -> str | None:
        settings = context.settings(kind)
        answer = await context.http.get(f"{settings['base_url']}/health", params={"key": settings["api_key"]})
        answer.raise_for_status()  # its message quotes the URL, key and all
        return None

    return check


def _provider(kind: str, *, secret: bool, health: bool = True) -> tollway.Provider:
    key = tollway.Setting(kind, "api_key", None, f"The {kind} provider's key.", secret=secret)
    url = tollway.Setting(kind, "base_url", None, f"The {kind} provider's address.")
    return tollway.Provider(
        kind=kind,
        name="standin",
        build=lambda settings, http: object(),
        settings=(key, url),
        requires=(key, url),
        health=_health(kind) if health else None,
    )


class ProvidersPlugin:
    """`lookup` (secret key) and `geo` (key not marked secret) answer their health checks;
    `mail` is never configured in the tests (its settings are missing)."""

    @tollway.hookimpl
    def register_providers(self, register):
        register(_provider("lookup", secret=True))
        register(_provider("geo", secret=False))
        register(_provider("mail", secret=True))


def provider_env(base: str) -> dict[str, str]:
    """`lookup` healthy, `geo` failing (503), `mail` unset."""
    return {
        "TOLLWAY_LOOKUP_API_KEY": LOOKUP_KEY,
        "TOLLWAY_LOOKUP_BASE_URL": f"{base}/ok",
        "TOLLWAY_GEO_API_KEY": GEO_KEY,
        "TOLLWAY_GEO_BASE_URL": f"{base}/down",
    }


__all__ = ["GEO_KEY", "LOOKUP_KEY", "ProvidersPlugin", "provider_env", "stand_in"]
