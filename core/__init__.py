"""Tollway's kernel: the plugin API (hook specs, the one `Tool` declaration) and
the paid-call pipeline (payments, credits, receipts, auth, errors).

No web framework is imported here; the fronts translate their protocol to
`Kernel.call` and back. Plugins need only what this module exports.
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
