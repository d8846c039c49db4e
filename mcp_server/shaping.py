"""Pure helpers of the MCP front: JSON schemas for tools/list, the output cap,
and the x402 payment of `_meta` as the kernel takes it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import msgspec

from tollway._core.wire import CallMeta, JobAccepted, JobStatus

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


def compact(schema: Any, *, root: bool = True) -> Any:
    """A schema as tools/list shows it: what a caller needs to build valid arguments,
    without what costs bytes and says nothing to it. Dropped: `title`s, `default: null`,
    the `null` branch of optional fields (omit the field instead), and
    `additionalProperties: false` below the root (unknown fields are refused all the same)."""
    if isinstance(schema, list):
        return [compact(item, root=False) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key == "discriminator":  # OpenAPI's, not JSON Schema's: each branch's tag enum says it
            continue
        if key == "required" and value == []:
            continue
        if key == "description" and isinstance(value, str):
            out[key] = " ".join(value.split())  # docstrings' indentation
            continue
        if key == "additionalProperties" and value is False and not root:
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: compact(sub, root=False) for name, sub in value.items()}
            continue
        out[key] = compact(value, root=False)
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        (kept,) = [b for b in branches if b != {"type": "null"}]
        del out["anyOf"]
        out = {**kept, **out} if isinstance(kept, dict) else out
    return out


# what they mean is said once, in the server's instructions
def _leaf_name(schema: dict[str, Any]) -> str:
    """A readable name for a bounded leaf: `string_1_100`, `number_0_1e12`, `integer_-1e12_1e12`."""

    def num(x: Any) -> str:
        if isinstance(x, float) and x.is_integer():
            x = int(x)
        if isinstance(x, int) and abs(x) >= 10**6 and str(abs(x)).rstrip("0") == "1":
            return f"{'-' if x < 0 else ''}1e{len(str(abs(x))) - 1}"
        return str(x)

    kind = schema.get("type", "value")
    lo = schema.get("minimum", schema.get("minLength", schema.get("exclusiveMinimum")))
    hi = schema.get("maximum", schema.get("maxLength", schema.get("exclusiveMaximum")))
    return "_".join([str(kind)] + [num(v) for v in (lo, hi) if v is not None])


_OWN = ("default", "description", "examples")  # stay where the leaf is used


def share_leaves(schema: dict[str, Any], *, least_bytes: int = 40, least_uses: int = 3) -> dict[str, Any]:
    """Leaf schemas repeated across a schema with `$defs` (the same bounded id, amount
    or time in many places) become one definition each, referenced where they were
    used (a use keeps its own default, description and examples beside the `$ref`)."""
    counts: dict[str, int] = {}

    def is_leaf(node: Any) -> bool:
        return (
            isinstance(node, dict)
            and "type" in node
            and not ({"properties", "items", "$ref", "additionalProperties", "anyOf"} & node.keys())
        )

    def key_of(node: dict[str, Any]) -> str:
        return dumps({k: node[k] for k in sorted(node) if k not in _OWN})

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if is_leaf(node):
                key = key_of(node)
                counts[key] = counts.get(key, 0) + 1
                return
            for k, value in node.items():
                if k not in _OWN and k != "enum":
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema.get("$defs"))
    walk(schema.get("properties"))
    taken = set(schema.get("$defs", {}))
    shared: dict[str, str] = {}
    for key, n in sorted(counts.items()):
        if n >= least_uses and len(key) >= least_bytes:
            base = name = _leaf_name(json.loads(key))
            k = 2
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            shared[key] = name
    if not shared:
        return schema

    def swap(node: Any) -> Any:
        if isinstance(node, dict):
            if is_leaf(node) and key_of(node) in shared:
                return {"$ref": f"#/$defs/{shared[key_of(node)]}", **{k: node[k] for k in _OWN if k in node}}
            return {k: (v if k in (*_OWN, "enum") else swap(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    out = {k: (swap(v) if k in ("properties", "$defs") else v) for k, v in schema.items()}
    out["$defs"] = {**out.get("$defs", {}), **{name: json.loads(key) for key, name in shared.items()}}
    return out


AUDIT_PROPERTIES: dict[str, Any] = {
    "memo": {"type": "string", "maxLength": 1000},
    "decisionContext": {"type": "object"},
}


def input_schema(tool: Any, *, max_wait_s: int) -> dict[str, Any]:
    """The tool's input for tools/list (compact), plus the MCP front's own arguments.

    A tool whose input nests objects (`$defs`) carries its first example as
    `examples`: a complex input is easier to get right from one. Every tool's
    examples are also served by the `describe_tool` tool."""
    schema = compact(_root_object(tool.input_schema()))
    if schema.get("$defs"):
        schema = share_leaves(schema)
        if tool.examples:
            schema["examples"] = [dict(tool.examples[0].input)]
    props = schema["properties"]
    for name, prop in AUDIT_PROPERTIES.items():
        props.setdefault(name, prop)
    if tool.idempotency != "ignored":
        props["idempotency_key"] = {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "description": "Generated when omitted." if tool.idempotency == "required" else "Optional.",
        }
    if tool.mode == "job":
        props["wait_seconds"] = {
            "type": "integer",
            "minimum": 0,
            "maximum": max_wait_s,
        }
    # the fronts' own fields are checked by the kernel: unknown fields stay refused there
    return schema


_STRING = {"type": "string"}
NOTE_PROPERTIES: dict[str, Any] = {
    "truncated": {
        "type": "boolean",
        "description": "Present and true when lists were shortened to fit the output cap.",
    },
    "omitted": {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "description": "Items left out, by list (dotted path), when truncated.",
    },
    "hint": {"type": "string", "description": "How to get what was left out, when truncated."},
}


def _struct_schema(type_: Any) -> dict[str, Any]:
    return _root_object(msgspec.json.schema(type_))


def output_schema(tool: Any) -> dict[str, Any]:
    """The HTTP answer's `data` for an inline tool (`CallMeta` plus the tool's output);
    the acceptance body for a job tool (`JobAccepted`, plus the `JobStatus` when the
    call waited); served by `describe_tool`, not in tools/list."""
    if tool.mode == "job":
        schema = _struct_schema(JobAccepted)
        job = _struct_schema(JobStatus)
        props = schema["properties"]
        props["status"] = {
            "type": "string",
            "enum": list(dict.fromkeys(["pending", "processing", "completed", "failed", tool.accepted_status])),
            "description": f"`{tool.accepted_status}` when accepted; with wait_seconds, the job's status when the wait ended.",
        }
        props["idempotency_key"] = _STRING
        props["job"] = {**job, "description": "The Job, when the call waited (wait_seconds)."}
        props.update(NOTE_PROPERTIES)
        schema["required"] = ["request_id", "tool", "status", "receipt_id"]
        return compact(schema)
    schema = _root_object(tool.output_schema())
    schema.pop("additionalProperties", None)
    meta = _struct_schema(CallMeta)
    props = dict(meta["properties"])
    props.update(schema["properties"])
    props.update(NOTE_PROPERTIES)
    schema["properties"] = props
    schema["required"] = list(dict.fromkeys([*meta["required"], *schema.get("required", [])]))
    return compact(schema)


# -- the output cap ------------------------------------------------------------------
TRUNCATED, OMITTED, HINT = "truncated", "omitted", "hint"
Hint = Callable[[dict[str, tuple[int, int]]], "str | None"]  # {path: (kept, omitted)} -> text


def _lists(value: Any, path: str, owner: Any, key: Any, out: list[tuple[str, Any, Any, list[Any]]]) -> None:
    if isinstance(value, list):
        out.append((path, owner, key, value))
        for i, item in enumerate(value):
            _lists(item, f"{path}[{i}]", value, i, out)
    elif isinstance(value, dict):
        for k, item in value.items():
            if owner is None and k in (OMITTED, HINT):
                continue  # our own notes
            _lists(item, f"{path}.{k}" if path else str(k), value, k, out)


def cap_output(value: Any, cap: int, hint: Hint | None = None) -> tuple[Any, int]:
    """Shorten `value` (a JSON object) until its compact JSON fits `cap` bytes.

    Only list items are dropped, from the end of the largest lists: every string
    stays whole and the result stays valid JSON of the same shape. When anything
    is dropped the object says so, inside the cap: `truncated: true`, `omitted`
    (items left out per list, by dotted path), `hint` (from `hint`, how to get the
    rest), and a `count` beside a shortened list counts what is returned (a
    `has_more` beside it becomes true). Returns the value and the number of items
    dropped.
    """
    if len(_ENC.encode(value)) <= cap:
        return value, 0
    value = copy.deepcopy(value)
    top = isinstance(value, dict)
    original: dict[str, int] = {}  # path -> length before any cut
    omitted: dict[str, int] = {}
    counted: dict[str, bool] = {}  # path -> its owner's `count` counted the whole list

    def notes() -> None:
        if not top:
            return
        value[TRUNCATED] = True
        value[OMITTED] = dict(omitted)
        text = hint({p: (original[p] - n, n) for p, n in omitted.items()}) if hint else None
        if text:
            value[HINT] = text
        else:
            value.pop(HINT, None)

    def cut(path: str, owner: Any, key: Any, target: list[Any], full: list[Any], keep: int) -> None:
        target[:] = full[:keep]
        omitted[path] = original[path] - keep
        if not omitted[path]:
            del omitted[path]
        for p in [p for p in omitted if p.startswith(path + "[") and int(p[len(path) + 1 :].split("]", 1)[0]) >= keep]:
            del omitted[p]  # lists inside items now dropped whole
        if isinstance(owner, dict):
            if counted.get(path):
                owner["count"] = keep
            if "has_more" in owner and isinstance(owner["has_more"], bool) and omitted.get(path):
                owner["has_more"] = True
        notes()

    notes()
    while len(_ENC.encode(value)) > cap:
        lists = [entry for entry in _collect(value) if entry[3]]
        if not lists:
            break  # nothing left to shorten without cutting strings
        path, owner, key, target = max(lists, key=lambda entry: len(_ENC.encode(entry[3])))
        full = list(target)
        if path not in original:
            original[path] = len(full)
            counted[path] = isinstance(owner, dict) and owner.get("count") == len(full) and key != "count"
        lo, hi, best = 0, len(full) - 1, 0  # keep `best` items: the most that fit
        while lo <= hi:
            mid = (lo + hi) // 2
            cut(path, owner, key, target, full, mid)
            if len(_ENC.encode(value)) <= cap:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        cut(path, owner, key, target, full, best)
    return value, sum(omitted.values())


def _collect(value: Any) -> list[tuple[str, Any, Any, list[Any]]]:
    out: list[tuple[str, Any, Any, list[Any]]] = []
    _lists(value, "", None, None, out)
    return out


# -- x402 --------------------------------------------------------------------------------
class BadPayment(ValueError):
    pass


def payment_value(meta_value: Any) -> dict[str, Any] | str:
    """`_meta["x402/payment"]` (object, JSON text or base64 JSON) as the kernel takes a
    payment: the object, or the base64 JSON text as given (the kernel decodes and checks it)."""
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
            return text
    else:
        raise BadPayment("x402/payment must be an object, JSON text or base64 JSON")
    if not isinstance(obj, dict):
        raise BadPayment("x402/payment must be a JSON object")
    return obj
