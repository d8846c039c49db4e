"""The inbox reads (free, `free_read`): an agent's emails newest first, and one email;
`include_body=true` adds the bodies and the attachments' content (base64), and is private:
it needs a read proof or an access token whatever the proof mode (docs/auth.md)."""

from __future__ import annotations

from tollway import Route

from .inbox import INCLUDE_BODY, LIMIT, OFFSET, list_emails, read_email

TAGS = ("inbox",)
INBOX_ROUTES = (
    Route(
        method="GET",
        path="/v1/tools/inbox/list",
        name="inbox_list",
        title="List your inbox",
        description="Emails addressed to your own address, newest first: {emails, count, has_more, agent_id}; include_body=true adds "
        "body, body_html and the attachments' content (base64); limit 1 to 100 (default 20), offset.",
        handle=list_emails,
        auth="read",
        tags=TAGS,
        mcp=True,
        query=(INCLUDE_BODY, LIMIT, OFFSET),
    ),
    Route(
        method="GET",
        path="/v1/tools/inbox/{email_id}",
        name="inbox_email",
        title="Read one email",
        description="One email of your inbox; include_body=true adds its bodies and the attachments' content.",
        handle=read_email,
        auth="read",
        tags=TAGS,
        mcp=True,
        query=(INCLUDE_BODY,),
    ),
)
