"""The ACP models read and write the protocol's own examples exactly, and what they write
validates against the 2026-01-30 JSON Schemas."""

from __future__ import annotations

import json

import jsonschema
import msgspec
import pytest
from acp_schemas import errors, examples, validate

from tollway_commerce import acp

EXAMPLE_TYPES = {
    "create_checkout_session_request": ("CheckoutSessionCreateRequest", acp.CheckoutSessionCreateRequest),
    "create_checkout_session_request_with_first_touch_attribution": (
        "CheckoutSessionCreateRequest",
        acp.CheckoutSessionCreateRequest,
    ),
    "create_checkout_session_response": ("CheckoutSession", acp.CheckoutSession),
    "update_checkout_session_request": ("CheckoutSessionUpdateRequest", acp.CheckoutSessionUpdateRequest),
    "update_checkout_session_response": ("CheckoutSession", acp.CheckoutSession),
    "complete_checkout_session_request": ("CheckoutSessionCompleteRequest", acp.CheckoutSessionCompleteRequest),
    "complete_checkout_session_request_seller_backed": (
        "CheckoutSessionCompleteRequest",
        acp.CheckoutSessionCompleteRequest,
    ),
    "complete_checkout_session_request_with_last_touch_attribution": (
        "CheckoutSessionCompleteRequest",
        acp.CheckoutSessionCompleteRequest,
    ),
    "complete_checkout_session_response": ("CheckoutSessionWithOrder", acp.CheckoutSession),
    "get_checkout_session_response": ("CheckoutSession", acp.CheckoutSession),
    "cancel_checkout_session_request": ("CancelSessionRequest", acp.CancelSessionRequest),
    "cancel_checkout_session_request_timing_deferred": ("CancelSessionRequest", acp.CancelSessionRequest),
    "cancel_checkout_session_response": ("CheckoutSession", acp.CheckoutSession),
    "webhook_order_create_event": ("webhook:WebhookEvent", acp.WebhookEvent),
    "webhook_order_update_event": ("webhook:WebhookEvent", acp.WebhookEvent),
    "checkout_session_authentication_required": ("CheckoutSession", acp.CheckoutSession),
    "complete_session_with_authentication_result_request": (
        "CheckoutSessionCompleteRequest",
        acp.CheckoutSessionCompleteRequest,
    ),
    "authentication_result_example": ("AuthenticationResult", acp.AuthenticationResult),
    "error_400_requires_3ds": ("Error", acp.Error),
}


def test_every_example_of_the_release_is_covered() -> None:
    assert set(examples()) == set(EXAMPLE_TYPES)


@pytest.mark.parametrize("name", sorted(EXAMPLE_TYPES))
def test_an_example_round_trips_through_its_model_unchanged(name: str) -> None:
    schema, model = EXAMPLE_TYPES[name]
    example = examples()[name]
    validate(schema, example)  # the published example is valid to begin with
    value = acp.decode(json.dumps(example).encode(), model)
    written = json.loads(acp.encode(value))
    assert written == example
    assert errors(schema, written) == []


def test_a_session_refuses_a_key_the_schema_does_not_know() -> None:
    session = dict(examples()["get_checkout_session_response"], surprise=1)
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        acp.decode(json.dumps(session).encode(), acp.CheckoutSession)
    with pytest.raises(jsonschema.ValidationError):
        validate("CheckoutSession", session)


def test_null_is_refused_where_the_schema_allows_none() -> None:
    """RFC §6.2 holds `null` apart from absent; 2026-01-30's schema accepts `null` nowhere."""
    with pytest.raises(msgspec.ValidationError):
        acp.decode(b'{"buyer": null}', acp.CheckoutSessionUpdateRequest)
    assert acp.encode(acp.CheckoutSessionUpdateRequest()) == b"{}"


def test_messages_and_fulfillment_options_are_told_apart_by_type() -> None:
    session = acp.decode(json.dumps(examples()["create_checkout_session_response"]).encode(), acp.CheckoutSession)
    assert all(
        isinstance(o, acp.FulfillmentOptionShipping | acp.FulfillmentOptionDigital) for o in session.fulfillment_options
    )
    message = acp.decode(
        b'{"type":"error","code":"payment_declined","content_type":"plain","content":"no"}', acp.Message
    )
    assert isinstance(message, acp.MessageError)


def test_the_error_exception_writes_the_flat_error_object() -> None:
    error = acp.AcpError(400, "invalid_request", "requires_3ds", "authenticate first", "$.authentication_result")
    body = json.loads(error.body())
    validate("Error", body)
    assert body == {
        "type": "invalid_request",
        "code": "requires_3ds",
        "message": "authenticate first",
        "param": "$.authentication_result",
    }
    version = json.loads(
        acp.AcpError(
            400, "invalid_request", "unsupported_api_version", "no", extra={"supported_versions": ["2026-01-30"]}
        ).body()
    )
    assert version["supported_versions"] == [acp.API_VERSION]
