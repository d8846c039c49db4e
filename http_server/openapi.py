"""OpenAPI for the generated tool routes: each tool's msgspec input and output
types become components; each tool operation gets its request body, its 200
envelope and the 402 quote answer."""
from __future__ import annotations

from typing import Any

import msgspec
from litestar.openapi.spec import Operation

from core.tool import Tool

REF = "#/components/schemas/{name}"


class ErrorBody(msgspec.Struct):
    error: str
    message: str
    details: Any | None = None


class PaymentRequiredBody(msgspec.Struct):
    error: str
    code: int
    message: str
    quote_id: str
    amount_usdc: str
    pay_to: str
    network: str
    expires_at: str


class ToolSchemas:
    """The components of every tool's input and output types, built together so
    that two plugins' types of the same name get distinct (qualified) names, and
    the reference of each type under that name."""

    def __init__(self, tools: list[Tool]) -> None:
        types: list[Any] = [ErrorBody, PaymentRequiredBody, JobAccepted]
        for tool in tools:
            types += [tool.input_type, tool.output_type]
        refs, self.components = msgspec.json.schema_components(types, ref_template=REF)
        self._refs = {t: r for t, r in zip(types, refs)}

    def ref(self, type_: Any) -> dict[str, str]:
        return dict(self._refs[type_])


class JobAccepted(msgspec.Struct):
    """The 202 answer of a job-mode tool (not wrapped in success/data)."""

    request_id: str
    tool: str
    status: str
    receipt_id: str | None = None
    message: str | None = None


def include_tool_components(app: Any, schemas: ToolSchemas) -> None:
    """Add the tools' msgspec schemas to the document's components.

    Litestar fills `components.schemas` from its own registry when it builds the
    document; the app's routes are all known once it is constructed, so the
    document is built now and the tool schemas merged into it.
    """
    from litestar._openapi.plugin import OpenAPIPlugin

    doc = app.plugins.get(OpenAPIPlugin).provide_openapi()
    doc.components.schemas = {**schemas.components, **(doc.components.schemas or {})}


def _audit_properties() -> dict[str, Any]:
    return {
        "memo": {"type": "string", "maxLength": 1000, "description": "Audit note copied into the receipt."},
        "decisionContext": {"type": "object", "description": "Open audit object (goal, goalId, alternatives, confidence 0..1) copied into the receipt."},
    }


def tool_operation_class(tool: Tool, schemas: ToolSchemas) -> type[Operation]:
    """An Operation subclass that fills in what a raw-body handler cannot show."""
    input_ref = schemas.ref(tool.input_type)
    output_ref = schemas.ref(tool.output_type)
    envelope = {
        "type": "object",
        "required": ["success", "data"],
        "properties": {
            "success": {"type": "boolean"},
            "data": {
                "allOf": [
                    {
                        "type": "object",
                        "required": ["request_id", "receipt_id", "status", "tool"],
                        "properties": {
                            "request_id": {"type": "string"},
                            "receipt_id": {"type": "string"},
                            "status": {"type": "string", "enum": ["completed"]},
                            "tool": {"type": "string", "enum": [tool.name]},
                        },
                    },
                    output_ref,
                ]
            },
        },
    }
    error = schemas.ref(ErrorBody)
    example = tool.examples[0].input if tool.examples else None
    # the shared JobAccepted shape, with the status this tool answers its 202 with
    accepted = {"allOf": [schemas.ref(JobAccepted), {"type": "object", "properties": {"status": {"type": "string", "enum": [tool.accepted_status]}}}]}

    class ToolOperation(Operation):
        # Operation is a dataclass without __post_init__, so its generated
        # __init__ would never call ours: extend __init__ instead.
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.request_body = {  # type: ignore[assignment]
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"allOf": [input_ref, {"type": "object", "properties": _audit_properties()}]},
                        **({"example": dict(example)} if example else {}),
                    }
                },
            }
            answered = (
                {"202": {"description": f"Accepted and paid (status `{tool.accepted_status}`); poll GET /v1/requests/{{request_id}} for the result.",
                         "content": {"application/json": {"schema": accepted}}}}
                if tool.mode == "job"
                else {"200": {"description": "The answer, paid.", "content": {"application/json": {"schema": envelope}}}}
            )
            self.responses = {  # type: ignore[assignment]
                **answered,
                "400": {"description": "Invalid input (refused before payment).", "content": {"application/json": {"schema": error}}},
                "402": {
                    "description": f"Payment required: the quote; header `{tool.payment_header}` pays it.",
                    "headers": {"PAYMENT-REQUIRED": {"description": "x402 v2 PaymentRequired, base64 JSON", "schema": {"type": "string"}}},
                    "content": {"application/json": {"schema": schemas.ref(PaymentRequiredBody)}},
                },
                "429": {"description": "Rate limit exceeded.", "content": {"application/json": {"schema": error}}},
            }
            self.parameters = [  # type: ignore[assignment]
                {"name": tool.payment_header, "in": "header", "required": False, "schema": {"type": "string"}, "description": "base64 x402 PaymentPayload"},
                {"name": "X-Quote-ID", "in": "header", "required": False, "schema": {"type": "string"}},
            ]

    ToolOperation.__name__ = f"{tool.name}_operation"
    return ToolOperation
