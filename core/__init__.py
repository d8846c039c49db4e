"""Tollway's kernel, free of any web framework: the hook specs, the Kernel, and the paid-call machinery.

The `Kernel` collects the plugins through pluggy; everything a call goes through is
here: admission, payment over x402 or credits, holds and the ledger, signed receipts,
jobs, watches, webhooks and history, over the database through `core.sql`. The fronts
(`http_server/`, `mcp_server/`) translate their protocol to the kernel and back, and
`runtime/` composes it with settings and a database. Plugins never import this
package: their whole surface is `tollway`. Importing it pins, first, the recursion
limit that backs the JSON depth check.
"""
from .json_depth import pin_recursion_limit

pin_recursion_limit()  # first: before anything imports eth-account (see core/json_depth.py)

from .datasources import DataSource
from .hookspecs import hookimpl, hookspec
from .periodic import PeriodicTask
from .settings_spec import Setting
from .tool import Example, Fact, Tool, ToolContext, ToolError
from .validation import FieldError, FieldErrors

__all__ = ["DataSource", "Example", "Fact", "FieldError", "FieldErrors", "PeriodicTask", "Setting", "Tool", "ToolContext", "ToolError", "hookimpl", "hookspec"]
