"""Tollway's kernel: the plugin API (hook specs, the one `Tool` declaration) and
the paid-call pipeline (payments, credits, receipts, auth, errors).

No web framework is imported here; the fronts translate their protocol to
`Kernel.call` and back.
"""
