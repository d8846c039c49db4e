"""Snapshots of the verification tool's public surface (`tollway.testing.PluginSurface`):
its OpenAPI operation and schemas, its MCP listing, a paid answer with its quote and
receipt (paid over x402, DNS from the local zone of `verify_dns_zone`), and the error
bodies of bad input and of a resolver that does not answer."""

from __future__ import annotations

from verify_dns_zone import Zone

from tollway.testing import PluginSurface, credits_session, http_client, normalise, paid_answer

PATH = "/v1/tools/verify/email"


class TestVerifySurface(PluginSurface):
    plugin = "tollway_verify"


async def test_paid_answer_and_receipt(kernel_factory, zone: Zone, snapshot) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=zone.env())
    answer = await paid_answer(kernel, PATH, {"email": "Jane.Doe@Example.com", "check_smtp": True})
    assert answer["quote"] == snapshot(name="quote")
    assert answer["answer"] == snapshot(name="answer")
    assert answer["receipt"] == snapshot(name="receipt")


async def test_error_bodies(kernel_factory, zone: Zone, snapshot) -> None:
    kernel = await kernel_factory(installed={"tollway_verify"}, env=zone.env())
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        answers = {
            "missing_email": await client.post(PATH, json={}),
            "several_fields": await client.post(PATH, json={"email": "j" * 321, "check_smtp": "yes", "colour": "red"}),
            "dns_timeout": await client.post(PATH, json={"email": "jane@silent.example.com"}, headers=auth),
            "dns_error": await client.post(PATH, json={"email": "jane@broken.example.com"}, headers=auth),
        }
    assert {name: {"status": r.status_code, "body": normalise(r.json())} for name, r in answers.items()} == snapshot
