"""Free reads of an agent's own things: job status,
receipts and spend analytics, notifications. A job belongs to the agent that paid for it; anyone else gets
404, never 403, so request ids leak nothing."""
from __future__ import annotations

from typing import Any

from . import analytics, jobs, notifications, wire
from .auth import Authenticator, Caller
from .errors import ServiceError
from .receipts import ReceiptBook
from .request import CallRequest
from .wire.slots import extended


class AgentReads:
    def __init__(self, *, auth: Authenticator, receipts: ReceiptBook, tools: Any = None) -> None:
        self.auth = auth
        self.receipts = receipts
        self.tools = tools if tools is not None else {}  # the live registry (filled at start)

    async def reader(self, req: CallRequest) -> Caller:
        caller = await self.auth.caller(req, scope="read")
        if caller is None:
            raise ServiceError(401, "unauthorized", "Send X-Agent-ID (wallet address or agent UUID) or an access token.")
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

    async def job_status(self, req: CallRequest, job_id: str) -> wire.JobStatus:
        return await self.job_for(await self.reader(req), job_id)

    async def receipt_for(self, req: CallRequest, receipt_id: str) -> wire.Receipt:
        caller = await self.reader(req)
        receipt = await self.receipts.served(receipt_id)
        if receipt is None or receipt.agent_id != caller.agent_id:
            raise ServiceError(404, "not_found", f"No receipt {receipt_id} for this agent.")
        return receipt

    async def list_receipts(self, req: CallRequest) -> wire.ReceiptPage:
        return await analytics.list_receipts((await self.reader(req)).agent_id, req.query)

    async def spend_breakdown(self, req: CallRequest) -> wire.SpendBreakdown:
        return await analytics.spend_breakdown((await self.reader(req)).agent_id, req.query)

    async def list_notifications(self, req: CallRequest) -> wire.NotificationPage:
        caller = await self.reader(req)
        # a read changes state only for a proven caller: a bare X-Agent-ID names anyone
        return await notifications.list_for(caller.agent_id, req.query, mark_read=caller.proven)
