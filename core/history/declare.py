"""Benchmark's keys of a data tool's declared facts: the number naming one ranked field
(`Benchmarkable`, declared with the tool in core/plugin_api/tool_declarations.py, is re-exported here)."""

from __future__ import annotations

import hashlib

from tollway._core.plugin_api.tool_declarations import MAX_PEER_FIELDS, Benchmarkable

__all__ = ["MAX_PEER_FIELDS", "Benchmarkable", "peer_group"]


def peer_group(attribute: str, field: str, source: str) -> int:
    """The signed 64-bit number naming one field of one attribute from one source (the
    first eight bytes of the SHA-256 of the three): the key Benchmark's indexes lead with."""
    digest = hashlib.sha256("\x1f".join((attribute, field, source)).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
