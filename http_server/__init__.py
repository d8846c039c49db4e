"""The HTTP front: a Litestar app that translates HTTP to `Kernel` calls and back."""
from .app import create_app

__all__ = ["create_app"]
