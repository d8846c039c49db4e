"""Free reads of an agent's own things: job status,
receipts and spend analytics, notifications. A job belongs to the agent that paid for it; anyone else gets
404, never 403, so request ids leak nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tollway._core import wire
from tollway._core.auth.auth import Authenticator, Caller
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.request import CallRequest
from tollway._core.jobs import jobs, notifications
from tollway._core.receipts import analytics
from tollway._core.receipts.receipts import ReceiptBook
from tollway._core.wire.slots import extended

# Who reads: any agent credential (the read routes' `caller_check` says so too).
NO_READER = "Send X-Agent-ID (wallet address or agent UUID) or an access token."


class AgentReads:
    """The reads, for a caller the route runner resolved (core/jobs/read_routes.py), or `reader`
    resolves (the push channel)."""

    def __init__(self, *, auth: Authenticator, receipts: ReceiptBook, tools: Any = None) -> None:
        self.auth = auth
        self.receipts = receipts
        self.tools = tools if tools is not None else {}  # the live registry (filled at start)

    async def reader(self, req: CallRequest) -> Caller:
        caller = await self.auth.caller(req, scope="read")
        if caller is None:
            raise ServiceError(401, "unauthorized", NO_READER)
        return caller

    async def job_for(self, caller: Caller, job_id: str) -> wire.JobStatus:
        row = await jobs.get(job_id)
        if row is None or row["agent_id"] != caller.agent_id:
            raise ServiceError(404, "not_found", f"No request {job_id} for this agent.")
        resource = jobs.resource(row)
        tool = self.tools.get(row["tool"])
        if tool is not None and tool.job_extras is not None:
            extras = await tool.job_extras(job_id)
            if extras:  # kernel fields replaced, the tool's own keys in the Job's slot
                resource = extended(resource, extras)
        return resource

    async def receipt_for(self, caller: Caller, receipt_id: str) -> wire.Receipt:
        receipt = await self.receipts.served(receipt_id)
        if receipt is None or receipt.agent_id != caller.agent_id:
            raise ServiceError(404, "not_found", f"No receipt {receipt_id} for this agent.")
        return receipt

    async def list_receipts(self, caller: Caller, query: Mapping[str, str]) -> wire.ReceiptPage:
        return await analytics.list_receipts(caller.agent_id, query)

    async def spend_breakdown(self, caller: Caller, query: Mapping[str, str]) -> wire.SpendBreakdown:
        return await analytics.spend_breakdown(caller.agent_id, query)

    async def list_notifications(self, caller: Caller, query: Mapping[str, str]) -> wire.NotificationPage:
        # a read changes state only for a proven caller: a bare X-Agent-ID names anyone
        return await notifications.list_for(caller.agent_id, query, mark_read=caller.proven)
