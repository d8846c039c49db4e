"""The HTTP front: a Litestar app that translates HTTP to `Kernel` calls and back."""

from tollway._http_server.app import create_app

__all__ = ["create_app"]
