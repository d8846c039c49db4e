"""What a `Route` declares besides its handler, as both fronts render it: a path alias is
served and documented as an operation of its own; `auth="signed_in"` takes a write proof or
an access token from signing in, never an operator-issued one, and `auth="proof"` no access
token at all; `answer_type` types the answer in OpenAPI and the MCP tool's output schema."""

from __future__ import annotations

import msgspec
import pytest
from eth_account import Account
from mcp import Client

from tollway import Route, RouteCall, hookimpl
from tollway._core.plugin_api.route_shapes import Alias, McpTool
from tollway._mcp_server import build_server
from tollway.testing import OPERATOR, credits_session, http_client, proof_headers

ITEM, ALIAS, CHANGE, PROVE = (
    "/v1/features/items/{item_id}",
    "/v1/features/things/{item_id}",
    "/v1/features/change",
    "/v1/features/prove",
)


class Item(msgspec.Struct):
    item_id: str
    agent_id: str


async def item(call: RouteCall) -> Item:
    return Item(item_id=call.params["item_id"], agent_id=call.agent_id)


async def changed(call: RouteCall) -> dict:
    return {"agent_id": call.agent_id, "via": call.caller.via}


class Features:
    @hookimpl
    def register_routes(self, register):
        register(
            Route(
                method="GET",
                path=ITEM,
                name="features_item",
                title="An item",
                description="One item.",
                handle=item,
                answer_type=Item,
                mcp=True,
                aliases=(Alias(path=ALIAS, name="features_item_alias"),),
            )
        )
        register(
            Route(
                method="POST",
                path=CHANGE,
                name="features_change",
                title="Change",
                description="Signed-in changes.",
                handle=changed,
                auth="signed_in",
            )
        )
        register(
            Route(
                method="POST",
                path=PROVE,
                name="features_prove",
                title="Prove",
                description="Proofs only.",
                handle=changed,
                auth="proof",
            )
        )


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("features", Features())])


async def _sign_in(client, owner) -> dict[str, str]:
    r = await client.post(
        "/v1/auth/sign-in",
        content=b"",
        headers=proof_headers(owner, scope="write", method="POST", path="/v1/auth/sign-in"),
    )
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


async def test_an_alias_is_served_and_documented_as_its_own_operation(kernel):
    async with http_client(kernel) as client:
        agent_id, token = await credits_session(client, "1")
        direct = await client.get("/v1/features/items/i-1", headers=token)
        aliased = await client.get("/v1/features/things/i-1", headers=token)
        nobody = await client.get("/v1/features/things/i-1")
        doc = (await client.get("/schema/openapi.json")).json()
    assert direct.status_code == aliased.status_code == 200
    assert direct.json() == aliased.json() == {"item_id": "i-1", "agent_id": agent_id}
    assert "RateLimit-Limit" in aliased.headers
    assert nobody.status_code == 401
    own, alias = doc["paths"][ITEM]["get"], doc["paths"][ALIAS]["get"]
    assert (own["operationId"], alias["operationId"]) == ("features_item", "features_item_alias")
    assert alias["responses"]["200"]["description"] == f"An item (same as GET {ITEM})."
    assert alias["parameters"] == own["parameters"] and alias["security"] == own["security"]


async def test_a_signed_in_route_refuses_operator_tokens_bare_ids_and_read_proofs(kernel):
    owner = Account.create()
    async with http_client(kernel) as client:
        agent_id, operator_token = await credits_session(client, "1", wallet=owner.address)
        signed_in = await _sign_in(client, owner)
        answers = {
            "operator_token": await client.post(CHANGE, headers=operator_token),
            "bare_id": await client.post(CHANGE, headers={"X-Agent-ID": owner.address}),
            "nothing": await client.post(CHANGE),
            "read_proof": await client.post(
                CHANGE, headers=proof_headers(owner, scope="read", method="POST", path=CHANGE)
            ),
            "signed_in": await client.post(CHANGE, headers=signed_in),
            "write_proof": await client.post(
                CHANGE, headers=proof_headers(owner, scope="write", method="POST", path=CHANGE)
            ),
        }
        doc = (await client.get("/schema/openapi.json")).json()
    shaped = {name: (r.status_code, r.json().get("error")) for name, r in answers.items()}
    assert shaped == {
        "operator_token": (403, "signed_in_token_needed"),
        "bare_id": (401, "invalid_agent_proof"),
        "nothing": (401, "unauthorized"),
        "read_proof": (401, "invalid_agent_proof"),
        "signed_in": (200, None),
        "write_proof": (200, None),
    }
    assert answers["signed_in"].json() == {"agent_id": agent_id, "via": "token"}
    assert answers["write_proof"].json() == {"agent_id": agent_id, "via": "proof"}
    assert doc["paths"][CHANGE]["post"]["security"] == [{"agentId": [], "agentProof": []}, {"accessToken": []}]


async def test_a_proof_route_takes_no_access_token_at_all(kernel):
    owner = Account.create()
    async with http_client(kernel) as client:
        _, operator_token = await credits_session(client, "1", wallet=owner.address)
        signed_in = await _sign_in(client, owner)
        by_token = [await client.post(PROVE, headers=h) for h in (operator_token, signed_in)]
        proved = await client.post(PROVE, headers=proof_headers(owner, scope="write", method="POST", path=PROVE))
        doc = (await client.get("/schema/openapi.json")).json()
    assert [(r.status_code, r.json()["error"]) for r in by_token] == [(403, "proof_needed")] * 2
    assert proved.status_code == 200 and proved.json()["via"] == "proof"
    assert doc["paths"][PROVE]["post"]["security"] == [{"agentId": [], "agentProof": []}]


async def test_the_answer_type_is_the_openapi_answer_and_the_mcp_output(kernel):
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
        refused = await client.post("/v1/tools/internal/access-tokens", json={"agent_id": "nobody"}, headers=OPERATOR)
    assert refused.status_code == 404  # the kernel's own operator route, as a Route
    ref = doc["paths"][ITEM]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    component = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert set(component["properties"]) == {"item_id", "agent_id"} and component["required"] == ["item_id", "agent_id"]
    async with Client(build_server(kernel).server) as mcp:
        described = await mcp.call_tool("describe_tool", {"name": "features_item"})
    output = described.structured_content["output_schema"]
    assert set(output["properties"]) == {"item_id", "agent_id"}


async def test_two_routes_may_not_be_the_same_mcp_tool(kernel_factory):
    class Clash:
        @hookimpl
        def register_routes(self, register):
            register(
                Route(
                    method="GET",
                    path="/v1/features/mine",
                    name="features_mine",
                    title="Mine",
                    description="Mine.",
                    handle=item,
                    mcp=McpTool(name="receipts"),
                )
            )  # the kernel's receipts listing is that tool

    kernel = await kernel_factory(plugins=[("clash", Clash())])
    with pytest.raises(RuntimeError, match="the same MCP tool"):
        build_server(kernel)
