"""The kernel's own plugin: the default settlement backends and the kernel's own routes
(reads, accounts, jobs, watches, value tags), declared through the same hooks a third-party
plugin uses."""

from __future__ import annotations

from tollway._core.plugin_api.hookspecs import hookimpl


@hookimpl(trylast=True)
def register_settlement_backends(register):
    from tollway._core.payments.facilitator import FacilitatorSettlement
    from tollway._core.payments.settlement import LocalSettlement

    register("local", LocalSettlement)
    register("facilitator", FacilitatorSettlement)


@hookimpl(trylast=True)
def register_routes(register):
    from tollway._core.credits import account_routes
    from tollway._core.jobs import read_routes
    from tollway._core.receipts import value_tags
    from tollway._core.watches import routes as watch_routes

    for module in (read_routes, account_routes, watch_routes, value_tags):
        for route in module.ROUTES:
            register(route)
