"""Validate ACP requests and answers against the protocol's own 2026-01-30 JSON Schemas.

The schemas are the protocol's files, copied unchanged into `fixtures/acp-2026-01-30/`
(origin and licence in `fixtures/README.md`). Both sides' tests use this module: the
seller's tests on what its routes receive and answer, the buyer's on what its client sends
and what the merchant answers.

    validate("CheckoutSessionCreateRequest", body)          # one object by its schema name
    validate("webhook:WebhookEvent", event)                  # the webhook yaml's components
    validate_exchange("POST", "/checkout_sessions", request_body, 201, answer_body)
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

FIXTURES = Path(__file__).parent / "fixtures" / "acp-2026-01-30"
CHECKOUT_SCHEMA = FIXTURES / "schema.agentic_checkout.json"
WEBHOOK_OPENAPI = FIXTURES / "openapi.agentic_checkout_webhook.yaml"
EXAMPLES = FIXTURES / "examples.agentic_checkout.json"

SESSION = re.compile(r"^(?:/v1)?/checkout_sessions/[^/]+$")
COMPLETE = re.compile(r"^(?:/v1)?/checkout_sessions/[^/]+/complete$")
CANCEL = re.compile(r"^(?:/v1)?/checkout_sessions/[^/]+/cancel$")
CREATE = re.compile(r"^(?:/v1)?/checkout_sessions$")


@cache
def _checkout() -> dict[str, Any]:
    return json.loads(CHECKOUT_SCHEMA.read_text())


@cache
def _webhook() -> dict[str, Any]:
    """The webhook yaml's component schemas as one JSON Schema document with `$defs`."""
    components = yaml.safe_load(WEBHOOK_OPENAPI.read_text())["components"]["schemas"]
    text = json.dumps(components).replace("#/components/schemas/", "#/$defs/")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "acp-webhook", "$defs": json.loads(text)}


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    document = _webhook() if name.startswith("webhook:") else _checkout()
    definition = name.removeprefix("webhook:")
    if definition not in document["$defs"]:
        raise KeyError(f"no schema {definition!r} in ACP 2026-01-30")
    registry = Registry().with_resource(document["$id"], Resource.from_contents(document, DRAFT202012))
    return jsonschema.Draft202012Validator(
        {"$ref": f"{document['$id']}#/$defs/{definition}"},
        registry=registry,
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


def validate(name: str, instance: Any) -> None:
    """Raise `jsonschema.ValidationError` (naming the path) unless `instance` is a valid
    `name`: a `$defs` entry of the checkout schema, or `webhook:<component>`."""
    _validator(name).validate(instance)


def errors(name: str, instance: Any) -> list[str]:
    """Every schema violation of `instance` as `path: message` (empty when valid)."""
    return [f"{e.json_path}: {e.message}" for e in _validator(name).iter_errors(instance)]


def version_error(instance: Any) -> None:
    """The API-Version refusal: an `Error` plus RFC §2.1's `supported_versions` array (the
    schema's Error refuses extra members, the RFC asks for this one)."""
    assert isinstance(instance.get("supported_versions"), list) and instance["supported_versions"], instance
    validate("Error", {k: v for k, v in instance.items() if k != "supported_versions"})


def request_schema(method: str, path: str) -> str | None:
    """The schema of a checkout request body, by method and path (None: no body)."""
    path = path.split("?", 1)[0]
    if method == "POST" and CREATE.match(path):
        return "CheckoutSessionCreateRequest"
    if method == "POST" and COMPLETE.match(path):
        return "CheckoutSessionCompleteRequest"
    if method == "POST" and CANCEL.match(path):
        return "CancelSessionRequest"
    if method == "POST" and SESSION.match(path):
        return "CheckoutSessionUpdateRequest"
    return None


def answer_schema(method: str, path: str, status: int) -> str:
    """The schema of a checkout answer, as `openapi.agentic_checkout.yaml` declares it:
    201 of create and 200 of the others a session (complete's with its order), any other
    status the Error object."""
    path = path.split("?", 1)[0]
    if status >= 300:
        return "Error"
    if method == "POST" and COMPLETE.match(path):
        return "CheckoutSessionWithOrder"
    return "CheckoutSession"


def validate_exchange(method: str, path: str, request_body: Any, status: int, answer_body: Any) -> None:
    """Validate one checkout call both ways: its request body (when it has one) and its
    answer, by the schemas the OpenAPI document gives that operation and status."""
    wanted = request_schema(method, path)
    if wanted is not None and request_body is not None:
        validate(wanted, request_body)
    if status >= 300 and isinstance(answer_body, dict) and "supported_versions" in answer_body:
        version_error(answer_body)
        return
    validate(answer_schema(method, path, status), answer_body)


def examples() -> dict[str, Any]:
    """The protocol's worked examples, by name."""
    return json.loads(EXAMPLES.read_text())
