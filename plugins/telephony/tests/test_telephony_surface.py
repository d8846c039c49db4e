"""Snapshots of the telephony tools' public surface (`tollway.testing.PluginSurface`): their
OpenAPI operations and schemas and their MCP listing; and, beside them, the OpenAPI
operations of the plugin's own routes (the webhooks and the SMS inbox)."""

from __future__ import annotations

from test_telephony_contract import ENV

from tollway.testing import PluginSurface, http_client

ROUTES = {
    "/v1/telephony/twilio/status": "post",
    "/v1/telephony/twilio/inbound-sms": "post",
    "/v1/telephony/twilio/inbound-call": "post",
    "/v1/tools/sms/inbox": "get",
    "/v1/tools/sms/inbox/{id}": "get",
}


class TestTelephonySurface(PluginSurface):
    plugin = "tollway_telephony"
    env = ENV


async def test_route_operations(kernel_factory, snapshot) -> None:
    kernel = await kernel_factory(installed={"tollway_telephony"}, env=ENV)
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
    operations = {path: doc["paths"][path][method] for path, method in ROUTES.items()}
    schemas = {name: doc["components"]["schemas"][name] for name in ("SmsInboxMessage", "SmsInboxPage")}
    assert {"operations": operations, "schemas": schemas} == snapshot
