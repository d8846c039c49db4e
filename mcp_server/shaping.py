"""Pure helpers of the MCP front: JSON schemas for tools/list, the output cap,
and the x402 payment payload as the kernel's payment header."""
from __future__ import annotations

import base64
import copy
import json
from typing import Any

import msgspec

TRUNCATED = "truncated"

_ENC = msgspec.json.Encoder()


def dumps(value: Any) -> str:
    return _ENC.encode(value).decode()


def _root_object(schema: dict[str, Any]) -> dict[str, Any]:
    """msgspec puts a Struct under `$defs` with a root `$ref`; MCP wants an object at the root."""
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.rsplit("/", 1)[1]
        root = dict(defs.pop(name))
        # a self-referencing Struct keeps its definition reachable
        if any(f"#/$defs/{name}" in json.dumps(d) for d in defs.values()) or f"#/$defs/{name}" in json.dumps(root):
            defs[name] = copy.deepcopy(root)
        schema = root
    if defs:
        schema["$defs"] = defs
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


AUDIT_PROPERTIES: dict[str, Any] = {
    "memo": {"type": "string", "maxLength": 1000, "description": "Why you make this call; signed into the receipt."},
    "decisionContext": {
        "type": "object",
        "description": "Free-form context signed into the receipt (`confidence` from 0 to 1 if given).",
    },
}


def input_schema(tool: Any, *, max_wait_s: int) -> dict[str, Any]:
    schema = _root_object(tool.input_schema())
    props = schema["properties"]
    for name, prop in AUDIT_PROPERTIES.items():
        props.setdefault(name, prop)
    if tool.idempotency != "ignored":
        props["idempotency_key"] = {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "description": "Idempotency-Key: a retry with the same key and arguments is answered once, charged once."
            + (" Required." if tool.idempotency == "required" else ""),
        }
        if tool.idempotency == "required":
            schema.setdefault("required", []).append("idempotency_key")
    if tool.mode == "job":
        props["wait_seconds"] = {
            "type": "integer",
            "minimum": 0,
            "maximum": max_wait_s,
            "description": f"Wait up to this many seconds (at most {max_wait_s}) for the job to finish inside this call; progress notifications are sent when you pass a progress token.",
        }
    # the fronts' own fields are checked by the kernel: unknown fields stay refused there
    return schema


_STRING = {"type": "string"}


def output_schema(tool: Any) -> dict[str, Any]:
    """The HTTP answer's `data` for an inline tool; the acceptance body for a job tool."""
    if tool.mode == "job":
        return {
            "type": "object",
            "properties": {
                "request_id": _STRING,
                "tool": _STRING,
                "status": {
                    "type": "string",
                    "enum": list(dict.fromkeys(["pending", "processing", "completed", "failed", tool.accepted_status])),
                    "description": f"`{tool.accepted_status}` when accepted; with wait_seconds, the job's status when the wait ended.",
                },
                "receipt_id": _STRING,
                "message": _STRING,
                "job": {"type": "object", "description": "The Job resource, when the call waited (wait_seconds)."},
                TRUNCATED: {"type": "boolean"},
            },
            "required": ["request_id", "tool", "status", "receipt_id"],
        }
    schema = _root_object(tool.output_schema())
    schema.pop("additionalProperties", None)
    props = {"request_id": _STRING, "receipt_id": _STRING, "status": {"type": "string"}, "tool": _STRING}
    props.update(schema["properties"])
    props[TRUNCATED] = {"type": "boolean", "description": "Present and true when lists were shortened to fit the output cap."}
    schema["properties"] = props
    schema["required"] = list(dict.fromkeys(["request_id", "receipt_id", "status", "tool", *schema.get("required", [])]))
    return schema


# -- the output cap ------------------------------------------------------------------
def _lists(value: Any, out: list[list[Any]]) -> None:
    if isinstance(value, list):
        out.append(value)
        for item in value:
            _lists(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _lists(item, out)


def cap_output(value: Any, cap: int) -> tuple[Any, int]:
    """Shorten `value` (a JSON object) until its compact JSON fits `cap` bytes.

    Only list items are dropped, from the end of the largest lists: every string
    stays whole and the result stays valid JSON of the same shape. Returns the
    value (with `truncated: true` when anything was dropped) and the number of
    items dropped.
    """
    if len(_ENC.encode(value)) <= cap:
        return value, 0
    value = copy.deepcopy(value)
    if isinstance(value, dict):
        value[TRUNCATED] = True
    dropped = 0
    while len(_ENC.encode(value)) > cap:
        lists: list[list[Any]] = []
        _lists(value, lists)
        lists = [lst for lst in lists if lst]
        if not lists:
            break  # nothing left to shorten without cutting strings
        target = max(lists, key=lambda lst: len(_ENC.encode(lst)))
        lo, hi = 0, len(target) - 1  # keep `lo`..`hi` items: find the most that fit
        full = list(target)
        best = 0
        while lo <= hi:
            mid = (lo + hi) // 2
            target[:] = full[:mid]
            if len(_ENC.encode(value)) <= cap:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        target[:] = full[:best]
        dropped += len(full) - best
    return value, dropped


# -- x402 --------------------------------------------------------------------------------
class BadPayment(ValueError):
    pass


def payment_header(meta_value: Any) -> str:
    """`_meta["x402/payment"]` (object, JSON text or base64 JSON) as the base64 JSON payment header."""
    if isinstance(meta_value, dict):
        obj = meta_value
    elif isinstance(meta_value, str):
        text = meta_value.strip()
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError as exc:
                raise BadPayment("x402/payment is not valid JSON") from exc
        else:
            return text  # base64 JSON already: the kernel decodes and checks it
    else:
        raise BadPayment("x402/payment must be an object, JSON text or base64 JSON")
    if not isinstance(obj, dict):
        raise BadPayment("x402/payment must be a JSON object")
    return base64.b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode("ascii")


def decode_b64_json(value: str) -> Any:
    return json.loads(base64.b64decode(value + "=" * (-len(value) % 4)))
