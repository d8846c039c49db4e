"""The answers' extension slots: a tool's keys ride a kernel answer at its top level, after
the kernel's own fields, so the bytes are those of a type that declared them; the schemas
document the slot's declared keys."""

from __future__ import annotations

import msgspec

from tollway._core import wire
from tollway._core.wire import calls, slots


def test_a_slot_key_is_encoded_at_the_top_level_after_the_kernels_fields() -> None:
    accepted = calls.JobAccepted(
        request_id="req_1", tool="compute", status="pending", receipt_id="rcpt_1", message="Accepted."
    )
    body = slots.extended(accepted, {"goal_id": "goal_1"})
    assert msgspec.json.encode(body) == (
        b'{"request_id":"req_1","tool":"compute","status":"pending","receipt_id":"rcpt_1","message":"Accepted.","goal_id":"goal_1"}'
    )
    assert msgspec.json.encode(slots.extended(accepted, {})) == msgspec.json.encode(accepted)


def test_a_kernel_field_given_by_a_tool_replaces_the_kernels_value() -> None:
    job = calls.JobStatus(
        request_id="req_1",
        status="completed",
        tool="sms_send",
        receipt_id=None,
        created_at="t0",
        updated_at="t1",
        result={"a": 1},
    )
    shown = slots.extended(job, {"result": {"a": 2}, "email_tracking": {"opens": 3}})
    assert msgspec.to_builtins(shown)["result"] == {"a": 2}
    assert list(msgspec.to_builtins(shown))[-1] == "email_tracking"
    assert "email_tracking" not in calls.JobStatus.__struct_fields__


def test_the_schemas_document_the_slots_keys_under_the_kernel_types_names() -> None:
    accepted = msgspec.json.schema(wire.JobAccepted)
    name = accepted["$ref"].rsplit("/", 1)[1]
    assert name == "JobAccepted" and "goal_id" in accepted["$defs"][name]["properties"]
    assert accepted["$defs"][name]["description"] == calls.JobAccepted.__doc__
    status = msgspec.json.schema(wire.JobStatus)["$defs"]["JobStatus"]
    assert status["properties"]["email_tracking"] == {"type": "object"}
