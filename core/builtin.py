"""The kernel's own plugin: the default settlement backends, declared through the
same hook a third-party plugin uses."""
from __future__ import annotations

from .hookspecs import hookimpl


@hookimpl(trylast=True)
def register_settlement_backends(register):
    from .payments.facilitator import FacilitatorSettlement
    from .payments.settlement import LocalSettlement

    register("local", LocalSettlement)
    register("facilitator", FacilitatorSettlement)

