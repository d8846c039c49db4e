"""The MCP front: every kernel tool as a Model Context Protocol tool (docs/mcp.md)."""

from tollway._mcp_server.server import (
    BearerIdentity,
    Identity,
    McpSettings,
    TollwayMcp,
    WalletIdentity,
    build_server,
    identity_from_key,
)

__all__ = [
    "BearerIdentity",
    "Identity",
    "McpSettings",
    "TollwayMcp",
    "WalletIdentity",
    "build_server",
    "identity_from_key",
]
