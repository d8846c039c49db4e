"""The OpenAPI document with every installed plugin loaded: every `$ref`
resolves (plugins' same-named types get distinct component names), every tool
route is there with its input schema, job tools document their 202, and the
answers, headers and parameters routes share are declared once and referenced."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from tollway.testing import http_client


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def _target(doc: dict[str, Any], ref: str) -> Any:
    """What a local reference (`#/components/<section>/<name>`) points at; None if nothing."""
    node: Any = doc
    for part in ref.removeprefix("#/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _resolve(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """`node`, with the reference it is followed (to schemas, responses, parameters or headers)."""
    while "$ref" in node:
        node = _target(doc, node["$ref"])
    return node


async def test_every_reference_resolves_with_all_plugins(kernel_factory):
    installed = {ep.name for ep in entry_points(group="tollway")}
    kernel = await kernel_factory(installed=installed)
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
    found = refs(doc)
    missing = {r for r in found if not r.startswith("#/components/") or _target(doc, r) is None}
    assert not missing
    for section in ("schemas", "responses", "parameters", "headers"):
        assert any(r.startswith(f"#/components/{section}/") for r in found), section
    for tool in kernel.tools.values():
        op = doc["paths"][tool.path]["post"]
        assert op["operationId"] == tool.name
        assert ("202" in op["responses"]) == (tool.mode == "job")
        assert "402" in op["responses"] and "400" in op["responses"]
    assert len(kernel.tools) >= 10


async def _document(kernel_factory) -> tuple[Any, dict[str, Any]]:
    installed = {ep.name for ep in entry_points(group="tollway")}
    kernel = await kernel_factory(installed=installed)
    async with http_client(kernel) as client:
        return kernel, (await client.get("/schema/openapi.json")).json()


async def test_security_schemes_and_payment_headers_are_declared(kernel_factory):
    kernel, doc = await _document(kernel_factory)
    schemes = doc["components"]["securitySchemes"]
    assert schemes["accessToken"] == {**schemes["accessToken"], "type": "http", "scheme": "bearer"}
    assert schemes["operatorToken"]["scheme"] == "bearer"
    assert (schemes["agentId"]["in"], schemes["agentId"]["name"]) == ("header", "X-Agent-ID")
    assert doc["paths"]["/v1/tools/internal/credits/grant"]["post"]["security"] == [{"operatorToken": []}]
    assert {"accessToken": []} in doc["paths"]["/v1/balance"]["get"]["security"]
    for tool in kernel.tools.values():
        op = doc["paths"][tool.path]["post"]
        params = {p["name"]: p for p in (_resolve(doc, p) for p in op["parameters"])}
        assert params[tool.payment_header]["in"] == "header" and not params[tool.payment_header]["required"]
        assert "X-Quote-ID" in params
        assert "PAYMENT-REQUIRED" in _resolve(doc, op["responses"]["402"])["headers"]
        answered = _resolve(doc, op["responses"]["202" if tool.mode == "job" else "200"])
        assert "PAYMENT-RESPONSE" in answered["headers"]
        assert _resolve(doc, answered["headers"]["PAYMENT-RESPONSE"])["schema"] == {"type": "string"}
        if tool.idempotency == "ignored":
            assert "Idempotency-Key" not in params
        else:
            assert params["Idempotency-Key"]["required"] is (tool.idempotency == "required")
    assert {"payment-signature", "X-Payment-Proof"} <= {t.payment_header for t in kernel.tools.values()}
    assert any(t.idempotency == "required" for t in kernel.tools.values())


async def test_every_route_has_its_body_and_every_answer_its_schema(kernel_factory):
    kernel, doc = await _document(kernel_factory)
    bodies = {
        "/v1/credits/top-up": "TopUpRequest",
        "/v1/tools/internal/agents/register": "RegisterAgentRequest",
        "/v1/tools/internal/credits/grant": "GrantCreditsRequest",
        "/v1/tools/internal/access-tokens": "AccessTokenRequest",
        "/v1/tools/internal/chain/fund": "ChainFundRequest",
    }
    for path, name in bodies.items():
        body = doc["paths"][path]["post"]["requestBody"]
        assert body["required"] and body["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{name}"
        }
    answers = {
        ("/v1/balance", "get", "200"): "Balance",
        ("/v1/credits/top-up", "post", "200"): "TopUpRecord",
        ("/v1/credits/top-up", "post", "402"): "PaymentRequiredBody",
        ("/v1/credits/top-up", "post", "503"): "ErrorBody",
        ("/v1/receipts/{receipt_id}", "get", "200"): "Receipt",
        ("/v1/receipts/{receipt_id}", "get", "404"): "ErrorBody",
        ("/v1/receipts/keys", "get", "200"): "ReceiptKeys",
        ("/v1/analytics/receipts", "get", "200"): "ReceiptPage",
        ("/v1/analytics/spend/breakdown", "get", "200"): "SpendBreakdown",
        ("/v1/requests/{request_id}", "get", "200"): "JobStatus",
        ("/v1/tools/notifications", "get", "200"): "NotificationPage",
        ("/v1/tools/notifications", "get", "429"): "ErrorBody",
        ("/v1/tools/internal/pending", "get", "200"): "PendingReport",
        ("/v1/tools/internal/access-tokens", "post", "200"): "AccessToken",
    }
    for (path, method, status), name in answers.items():
        schema = _resolve(doc, doc["paths"][path][method]["responses"][status])["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{name}"}, (path, status)
    # JSON everywhere but on what a person's browser or mail reader opens, or a provider calls
    # back: the routes a plugin declares as pages (approval links, a connection's return from the
    # code host, the email tool's tracking pixel and links, Twilio's webhooks, a soul's profile)
    pages = {(r.path, r.method.lower()) for r in kernel.routes.values() if r.page}
    assert {("/v1/approvals/{token}", "get"), ("/v1/souls/{slug}/profile", "get")} <= pages
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, answer in op["responses"].items():
                content = _resolve(doc, answer)["content"]
                page = (path, method) in pages
                assert "application/json" in content or (len(content) == 1 and page), (path, method, status)
    # the signed receipt's fields, under their wire names, all required (nulls included)
    receipt = doc["components"]["schemas"]["Receipt"]
    assert {"decisionContext", "digest", "signature", "key_id", "revision", "metadata_digest"} <= set(
        receipt["required"]
    )
    assert receipt["additionalProperties"] is False
    # a job that is not finished has no result: result and error fields are optional
    job = doc["components"]["schemas"]["JobStatus"]
    assert "result" in job["properties"] and "result" not in job["required"] and "error_code" not in job["required"]


async def test_tool_routes_declare_every_refusal_and_exactly_one_of(kernel_factory):
    kernel, doc = await _document(kernel_factory)
    for tool in kernel.tools.values():
        responses = doc["paths"][tool.path]["post"]["responses"]
        assert {"400", "401", "402", "409", "422", "429", "503"} <= set(responses)
        assert _resolve(doc, responses["402"])["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/PaymentRequiredBody"
        }
        assert _resolve(doc, responses["429"])["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorBody"
        }
    one_of = {t.name: t for t in kernel.tools.values() if t.exactly_one_of}
    assert {"compound_resolve", "company_bank_profile", "variant_clinical_significance"} <= set(one_of)
    compound = one_of["compound_resolve"]
    schema = doc["paths"][compound.path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"oneOf": [{"required": ["name"]}, {"required": ["inchikey"]}, {"required": ["smiles"]}]} in schema["allOf"]
    quote = _resolve(doc, {"$ref": "#/components/schemas/PaymentRequiredBody"})
    assert {"error", "code", "message", "quote_id", "amount_usdc", "pay_to", "network", "expires_at"} <= set(
        quote["required"]
    )


async def test_shared_answers_headers_and_parameters_are_declared_once(kernel_factory):
    kernel, doc = await _document(kernel_factory)
    components = doc["components"]
    for tool in kernel.tools.values():
        op = doc["paths"][tool.path]["post"]
        refusals = {s: r for s, r in op["responses"].items() if s not in ("200", "202")}
        assert refusals and all(
            set(r) == {"$ref"} and r["$ref"].startswith("#/components/responses/") for r in refusals.values()
        )
        assert all(set(p) == {"$ref"} and p["$ref"].startswith("#/components/parameters/") for p in op["parameters"])
        answered = op["responses"]["202" if tool.mode == "job" else "200"]
        assert all(h == {"$ref": f"#/components/headers/{name}"} for name, h in answered["headers"].items())
    # the shared refusals keep their headers: rate limits on every one (but the operator's), the quote on 402
    limited = _resolve(doc, {"$ref": "#/components/responses/TooManyRequests"})
    assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} == set(limited["headers"])
    assert set(_resolve(doc, {"$ref": "#/components/responses/PaymentRequired"})["headers"]) >= {
        "PAYMENT-REQUIRED",
        "RateLimit-Reset",
    }
    assert "headers" not in _resolve(doc, doc["paths"]["/v1/tools/internal/credits/grant"]["post"]["responses"]["401"])
    assert components["headers"]["RateLimit-Remaining"]["schema"] == {"type": "integer"}
    # one shared Idempotency-Key per way tools take it (required, optional)
    idempotency = [p["required"] for p in components["parameters"].values() if p["name"] == "Idempotency-Key"]
    assert sorted(idempotency) == sorted(
        {t.idempotency == "required" for t in kernel.tools.values() if t.idempotency != "ignored"}
    )
