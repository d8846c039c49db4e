"""The kernel's own plugin: the default settlement backends and the kernel's own routes
(value tags and return on spend), declared through the same hooks a third-party plugin uses."""
from __future__ import annotations

from .hookspecs import hookimpl


@hookimpl(trylast=True)
def register_settlement_backends(register):
    from .payments.facilitator import FacilitatorSettlement
    from .payments.settlement import LocalSettlement

    register("local", LocalSettlement)
    register("facilitator", FacilitatorSettlement)


@hookimpl(trylast=True)
def register_routes(register):
    from .value_tags import ROUTES

    for route in ROUTES:
        register(route)
