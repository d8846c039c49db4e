"""The discovery document of `rfc.discovery` (§4.2) as a JSON Schema written from the RFC's
field tables, its closed enums (services, transports, intervention types) and its MUSTs (§10):
no schema for it ships with 2026-01-30, so both sides' tests validate against this one.

`services` also admits `feeds`, which `rfc.product_feeds` §3.5 adds to it. Extra members are
refused, so a document that validates here carries nothing the RFC does not name (no payment
handler, PSP or merchant id, §7.1)."""

from __future__ import annotations

from typing import Any

import jsonschema

DATE = r"^\d{4}-\d{2}-\d{2}$"
URI = {"type": "string", "pattern": r"^https?://[^\s]+$"}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["protocol", "api_base_url", "transports", "capabilities"],
    "additionalProperties": False,
    "properties": {
        "protocol": {
            "type": "object",
            "required": ["name", "version", "supported_versions"],
            "additionalProperties": False,
            "properties": {
                "name": {"const": "acp"},
                "version": {"type": "string", "pattern": DATE},
                "supported_versions": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": DATE}},
                "documentation_url": URI,
            },
        },
        "api_base_url": URI,
        "transports": {
            "type": "array",
            "contains": {"const": "rest"},
            "uniqueItems": True,
            "items": {"enum": ["rest", "mcp"]},
        },
        "capabilities": {
            "type": "object",
            "required": ["services"],
            "additionalProperties": False,
            "properties": {
                "services": {
                    "type": "array",
                    "uniqueItems": True,
                    "items": {"enum": ["checkout", "orders", "delegate_payment", "carts", "feeds"]},
                },
                "extensions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {"name": {"type": "string"}, "spec": URI, "schema": URI},
                    },
                },
                "intervention_types": {
                    "type": "array",
                    "uniqueItems": True,
                    "items": {"enum": ["3ds", "biometric", "address_verification"]},
                },
                "supported_currencies": {"type": "array", "items": {"type": "string", "pattern": r"^[a-z]{3}$"}},
                "supported_locales": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}


def validate_discovery(document: Any) -> None:
    """Raise unless `document` is a DiscoveryResponse: the schema, then the order MUSTs the schema
    cannot say (supported_versions oldest first, the last one `version`)."""
    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    versions = document["protocol"]["supported_versions"]
    if versions != sorted(versions) or versions[-1] != document["protocol"]["version"]:
        raise jsonschema.ValidationError(f"supported_versions {versions} is not oldest first ending with version")
