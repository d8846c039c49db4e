"""Tollway's kernel, free of any web framework, installed as `tollway._core`: a folder per area
(docs/architecture.md, "Where things are in core/") and, at this level, the composition root.

The `Kernel` (`kernel.py`) collects the plugins through pluggy and builds each area's services
with explicit dependencies: admission, payment over x402 or credits, holds and the ledger, signed
receipts, jobs, watches, webhooks and history, over the database (`storage/`). The fronts
(`http_server/`, `mcp_server/`) render the kernel's `Tool`s and `Route`s, and `runtime/`
composes it with settings and a database. Plugins never import this package: their whole
surface is `tollway`. Importing it pins, first, the recursion limit that backs the JSON depth
check, and imports nothing else.
"""

from tollway._core.basics.json_depth import pin_recursion_limit

pin_recursion_limit()  # first: before anything imports eth-account (see core/basics/json_depth.py)
