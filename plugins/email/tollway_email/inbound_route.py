"""The provider inbound route: a mail service's forwarder (an inbound route or parse webhook
set to post the raw message) POSTs each message as it arrived, as `message/rfc822`, with the
operator token; it is handled as if the SMTP listener had received it."""

from __future__ import annotations

from typing import Any

from tollway import Refusal, Route, RouteCall

from .inbound import MAX_MESSAGE_BYTES, parse

PATH = "/v1/tools/internal/inbound/email"


async def receive(call: RouteCall) -> dict[str, Any]:
    raw = call.request.body
    if not raw.strip():
        raise Refusal(
            "invalid_request",
            "The body must be the raw message (message/rfc822).",
            details=[{"field": "$", "message": "empty"}],
        )
    if len(raw) > MAX_MESSAGE_BYTES:
        raise Refusal("invalid_request", "The message is over 10 MB.", details=[{"field": "$", "message": "too large"}])
    try:
        message = parse(raw)
    except Exception as exc:
        raise Refusal(
            "invalid_request",
            "The body is not a message that can be parsed.",
            details=[{"field": "$", "message": "not RFC 822"}],
        ) from exc
    if not message.sender:
        raise Refusal(
            "invalid_request", "The message has no From address.", details=[{"field": "From", "message": "missing"}]
        )
    taken = await call.platform.deliver_inbound(message)
    return {"success": True, "data": {"message_id": message.message_id, "delivered": taken}}


INBOUND_ROUTE = Route(
    method="POST",
    path=PATH,
    name="operator_inbound_email",
    title="Receive an email",
    description="A mail provider's forwarder posts one raw message (message/rfc822) here with the operator token; "
    "it is handled as the SMTP listener handles what it receives.",
    handle=receive,
    auth="operator",
    rate_limit=None,
    tags=("operator",),
    statuses=(400, 401),
)
