"""A route's field checks and query parameters are the caller's errors, never the
service's: a body check (`Route.check` raising FieldError, FieldErrors or ValueError)
or a check the handler runs itself answers 400 `invalid_request` naming the fields,
and typed query parameters (`QueryInt`, `QueryFlag`, `QueryChoice`, `QueryText`) are
parsed before the handler, refused with one 400 naming each bad one, and typed in the
OpenAPI document from the same declaration."""

from __future__ import annotations

import pytest

from tests.support.routes_plugin import RoutesPlugin
from tollway.testing import credits_session, http_client


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("routes", RoutesPlugin())])


async def test_field_checks_of_a_routes_body_answer_400_naming_the_fields(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        both = await client.post("/v1/test/routes/checked", json={"subject": "a\r\nBcc: x", "copies": 3}, headers=auth)
        one = await client.post("/v1/test/routes/checked", json={"subject": "fine", "copies": 3}, headers=auth)
        ok = await client.post("/v1/test/routes/checked", json={"subject": "fine", "copies": 2}, headers=auth)
        plain = await client.post("/v1/test/routes/plain", json={"subject": " spaced"}, headers=auth)
        in_handler = await client.post("/v1/test/routes/quote", json={"subject": "a\rb"}, headers=auth)
    assert both.status_code == 400 and both.json()["error"] == "invalid_request"
    assert [d["field"] for d in both.json()["details"]] == ["subject", "copies"]
    assert one.status_code == 400 and one.json()["details"] == [{"field": "copies", "message": "must be even"}]
    assert ok.status_code == 200 and ok.json() == {"subject": "fine", "copies": 2}
    assert plain.status_code == 400 and plain.json()["error"] == "invalid_request"
    assert plain.json()["details"] == [{"field": "$", "message": "the subject starts with a space"}]
    assert in_handler.status_code == 400 and in_handler.json()["details"] == [
        {"field": "subject", "message": "must be one line"}
    ]


async def test_typed_query_parameters_are_parsed_before_the_handler_and_refused_by_name(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        defaults = await client.get("/v1/test/routes/items", headers=auth)
        given = await client.get("/v1/test/routes/items?limit=50&newest=TRUE&order=date&word=ship&note=x", headers=auth)
        refused = {
            raw: await client.get(f"/v1/test/routes/items?{raw}", headers=auth)
            for raw in ("limit=0", "limit=51", "limit=ten", "newest=yes", "order=size", "word=" + "w" * 21)
        }
        several = await client.get("/v1/test/routes/items?limit=-1&newest=2&order=Name", headers=auth)
        schema = (await client.get("/schema/openapi.json")).json()
    assert defaults.status_code == 200 and defaults.json() == {
        "limit": 10,
        "newest": False,
        "order": "name",
        "word": None,
        "note": None,
    }
    assert given.json() == {"limit": 50, "newest": True, "order": "date", "word": "ship", "note": "x"}
    for raw, resp in refused.items():
        assert resp.status_code == 400 and resp.json()["error"] == "invalid_request", raw
        assert [d["field"] for d in resp.json()["details"]] == [raw.split("=")[0]], raw
    assert several.status_code == 400 and [d["field"] for d in several.json()["details"]] == [
        "limit",
        "newest",
        "order",
    ]
    params = {p["name"]: p["schema"] for p in schema["paths"]["/v1/test/routes/items"]["get"]["parameters"]}
    assert params == {
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "newest": {"type": "boolean", "default": False},
        "order": {"type": "string", "enum": ["name", "date"], "default": "name"},
        "word": {"type": "string", "maxLength": 20},
        "note": {"type": "string"},
    }


async def test_the_email_quote_answers_400_for_a_subject_with_a_carriage_return(kernel_factory):
    kernel = await kernel_factory(installed={"tollway_email"})
    draft = {"to": "dana@example.com", "subject": "Hello\rBcc: x@example.com", "text": "Hi."}
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        quoted = await client.post("/v1/tools/email/quote", json=draft, headers=auth)
    assert quoted.status_code == 400, quoted.text
    assert quoted.json()["error"] == "invalid_request" and [d["field"] for d in quoted.json()["details"]] == ["subject"]


@pytest.mark.parametrize("db_kind", ["sqlite"], indirect=True)
async def test_plugin_listings_document_their_query_parameters_with_types_and_bounds(kernel_factory):
    kernel = await kernel_factory(installed={"tollway_email", "tollway_telephony", "tollway_souls"})
    async with http_client(kernel) as client:
        schema = (await client.get("/schema/openapi.json")).json()
        _, auth = await credits_session(client, "1")
        too_many = await client.get("/v1/tools/inbox/list?limit=101", headers=auth)

    def params(path: str) -> dict[str, dict]:
        return {p["name"]: p["schema"] for p in schema["paths"][path]["get"]["parameters"] if p["in"] == "query"}

    email = params("/v1/tools/inbox/list")
    assert email["limit"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
    assert email["offset"]["type"] == "integer" and email["offset"]["minimum"] == 0
    assert email["include_body"] == {"type": "boolean", "default": False}
    sms = params("/v1/tools/sms/inbox")
    assert sms["limit"]["type"] == "integer" and sms["limit"]["maximum"] == 100
    souls = params("/v1/souls")
    assert souls["limit"]["type"] == "integer" and souls["limit"]["maximum"] == 100
    assert too_many.status_code == 400 and too_many.json()["details"][0]["field"] == "limit"


def test_a_page_path_may_hold_words_after_its_first_and_nothing_else_odd() -> None:
    """A page of the service's own may nest (/console/receipts/{receipt_id}); paths keep
    to lower-case words and {name} parameters."""
    from tollway import Route

    async def handle(call):
        return {}

    def route(path: str) -> Route:
        return Route(method="GET", path=path, name="p", title="P", description="P.", handle=handle, auth="public")

    for fine in ("/console", "/console/receipts", "/console/receipts/{receipt_id}", "/sites/{slug}/{file}"):
        assert route(fine).path == fine
    for bad in ("/console/", "/Console/x", "/console//x", "/console/{a b}", "/console/x.html", "/console/{a}b"):
        with pytest.raises(ValueError, match="path must look like"):
            route(bad)
