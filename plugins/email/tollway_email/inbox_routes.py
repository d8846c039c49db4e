"""The inbox reads (free, `free_read`): an agent's emails newest first, and one email;
`include_body=true` adds the bodies and the attachments' content (base64), and is private:
it needs a read proof or an access token whatever the proof mode (docs/auth.md)."""
from __future__ import annotations

from tollway import Route

from .inbox import INCLUDE_BODY, LIMIT, OFFSET, list_emails, read_email

TAGS = ("inbox",)
INBOX_ROUTES = (
    Route("GET", "/v1/tools/inbox/list", "inbox_list", "List your inbox",
          "Emails addressed to your own address, newest first: {emails, count, has_more, agent_id}; include_body=true adds "
          "body, body_html and the attachments' content (base64); limit 1 to 100 (default 20), offset.",
          list_emails, auth="read", tags=TAGS, mcp=True,
          query=(INCLUDE_BODY, LIMIT, OFFSET)),
    Route("GET", "/v1/tools/inbox/{email_id}", "inbox_email", "Read one email",
          "One email of your inbox; include_body=true adds its bodies and the attachments' content.",
          read_email, auth="read", tags=TAGS, mcp=True, query=(INCLUDE_BODY,)),
)
