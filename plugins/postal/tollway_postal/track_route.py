"""`GET /v1/tools/physical-mail/letters/{request_id}` (free, `free_read`): a letter the caller
sent with `physical_mail_send`, as the `mail` provider reports it now (its rendering status
and USPS tracking events). Only the sending agent sees it; anyone else gets 404."""

from __future__ import annotations

from typing import cast

from tollway import Refusal, Route, RouteCall, ToolError

from .lob import MailClient
from .shapes import PostalLetterTracking, PostalTrackingEvent
from .tables import PostalLetter


async def track(call: RouteCall) -> PostalLetterTracking:
    request_id = call.params["request_id"]
    row = (
        await PostalLetter.select(PostalLetter.letter_id)
        .where((PostalLetter.request_id == request_id) & (PostalLetter.agent_id == call.agent_id))
        .first()
    )
    if row is None or not row["letter_id"]:
        raise Refusal("not_found", "No letter of yours was sent by this request.", status=404)
    try:
        client, _cost = call.platform.provider("mail")
        mail = cast(MailClient, client)  # the kind's interface
    except LookupError:
        raise Refusal("provider_unavailable", "No mail provider is configured on this service.", status=503) from None
    try:
        letter = await mail.letter(row["letter_id"])
    except ToolError as exc:
        raise Refusal(exc.code, exc.message, status=503, details=exc.details) from exc
    if letter is None:
        raise Refusal("not_found", "The mail provider no longer knows this letter.", status=404)
    return PostalLetterTracking(
        request_id=request_id,
        letter_id=letter.id,
        expected_delivery_date=letter.expected_delivery_date,
        status=letter.status,
        tracking_events=[
            PostalTrackingEvent(name=e.name, time=e.time, location=e.location) for e in letter.tracking_events
        ],
    )


TRACK_ROUTE = Route(
    method="GET",
    path="/v1/tools/physical-mail/letters/{request_id}",
    name="physical_mail_letter",
    title="Track a letter",
    description="A letter you sent with physical_mail_send, by the send's request_id: the provider's letter id, expected delivery date, "
    "rendering status and USPS tracking events, as the provider reports them now.",
    handle=track,
    auth="read",
    answer_type=PostalLetterTracking,
    tags=("physical mail",),
    statuses=(401, 404, 429, 503),
)

__all__ = ["TRACK_ROUTE"]
