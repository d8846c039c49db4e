"""The paid-call pipeline (docs/architecture.md): validate, price, pay (credits or x402),
run, sign the receipt; refund or leave unsettled when the tool fails.

Input is refused before any payment; an x402 payment is settled only after an
inline tool succeeded; credits are taken before the tool runs and given back if
it fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import msgspec
import msgspec.structs

from tollway._core.auth.agents import AgentDirectory
from tollway._core.auth.auth import Authenticator, Caller
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.events import JOBS_NEW, EventBus, publish_unless_in_sql
from tollway._core.basics.ids import sorted_id
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.calls.idempotency import IdempotencyStore, check_key, missing_key
from tollway._core.calls.prepare import PreparedCall, input_hash_of, prepare
from tollway._core.calls.rate_identity import RateGate, payer_of
from tollway._core.calls.tool_runner import ToolRunner
from tollway._core.credits import holds, ledger
from tollway._core.credits.refunds import Refunds
from tollway._core.history.store import observed_heads
from tollway._core.jobs import job_payments
from tollway._core.payments import paid_settlement
from tollway._core.payments.gateway import Accepted, AuthorizationVoided, PaymentFailed, X402Gateway, find_payment
from tollway._core.payments.networks import Network
from tollway._core.payments.settlement import SettlementResult
from tollway._core.plugin_api.tool import Tool, ToolContexts, ToolError
from tollway._core.receipts.receipts import ReceiptBook
from tollway._core.wire.calls import JobAccepted, Success
from tollway._core.wire.slots import extended

log = logging.getLogger("tollway.pipeline")


def _spends_credits(caller: Caller | None, method: str | None) -> bool:
    """Credits pay when the caller may spend them and did not ask for x402 (`method`, the
    request's `payment_method()`)."""
    return caller is not None and caller.can_spend and method != "x402"


_PLAIN: dict[type, bool] = {}


def _plain_struct(kind: type) -> bool:
    """Whether `kind` is a Struct whose `asdict` is its builtins' top level: its own field names
    on the wire, every field written (no `omit_defaults`), no tag, not written as an array."""
    plain = _PLAIN.get(kind)
    if plain is None:
        config = getattr(kind, "__struct_config__", None)
        plain = _PLAIN[kind] = (
            config is not None
            and kind.__struct_encode_fields__ == kind.__struct_fields__  # type: ignore[attr-defined]
            and not config.omit_defaults
            and not config.array_like
            and config.tag is None
        )
    return plain


class PaidCalls:
    """The one pipeline every front calls for a paid tool."""

    def __init__(
        self,
        *,
        db: Any,
        tools: Mapping[str, Tool],
        network: Network,
        auth: Authenticator,
        agents: AgentDirectory,
        receipts: ReceiptBook,
        refunds: Refunds,
        idempotency: IdempotencyStore,
        rate_gate: RateGate,
        gateway: X402Gateway,
        events: EventBus,
        contexts: ToolContexts,
        runner: ToolRunner | None = None,
        watch_sources: Mapping[str, Any] | None = None,
    ) -> None:
        self.db = db
        self.tools = tools
        self.network = network
        self.auth = auth
        self.agents = agents
        self.receipts = receipts
        self.refunds = refunds
        self.idempotency = idempotency
        self.rate_gate = rate_gate
        self.gateway = gateway
        self.events = events
        self.contexts = contexts
        # Runs the tool, records a lookup's facts and queues its watched changes (core/calls/tool_runner.py).
        self.runner = runner if runner is not None else ToolRunner(contexts=contexts, watch_sources=watch_sources)

    def prepare(self, tool: Tool, body: bytes) -> PreparedCall:
        """Validate and price: everything that must happen before payment."""
        return prepare(tool, body)

    async def call(self, tool_name: str, req: CallRequest) -> Answer:
        """One paid tool call, counted against the tool's rate-limit category; the
        `RateLimit-*` headers go on the answer and on every refusal."""
        tool = self.tools.get(tool_name)
        if tool is None:
            raise ServiceError(404, "invalid_input", f"Unknown tool {tool_name!r}.")
        return await self.rate_gate.limited(tool.rate_limit, req, lambda: self._call(tool, req))

    async def _call(self, tool: Tool, req: CallRequest) -> Answer:
        method = req.payment_method()  # an unknown X-Payment-Method: 400, before any payment
        key = req.header("idempotency-key") if tool.idempotency != "ignored" else None
        if key is not None:
            check_key(key)
        elif tool.idempotency == "required":
            raise missing_key()
        call = self.prepare(tool, req.body)
        self.contexts.require_configured(tool)  # a required setting unset: 503, still before payment
        if tool.admit is not None:  # checks of stored state, still before payment
            call.admit(await tool.admit(call.value))
        payment_header = find_payment(req)
        caller = None if payment_header is not None else await self.auth.caller(req, scope="write", consume_nonce=False)
        spends = _spends_credits(caller, method)
        if key is None:
            return await self._pay_and_run(call, req, payment_header, caller, spends)
        identity = payer_of(self.network, req) if payment_header is not None else (caller.agent_id if spends else None)
        if identity is None:  # nothing will execute (a 402 quote): the key is not claimed
            return await self._pay_and_run(call, req, payment_header, caller, spends)
        return await self.idempotency.answer_once(
            f"{tool.name}:{identity}",
            key,
            req.body,
            lambda: self._pay_and_run(call, req, payment_header, caller, spends),
            durable=tool.idempotency_durable,
        )

    async def _pay_and_run(
        self,
        call: PreparedCall,
        req: CallRequest,
        payment_header: dict[str, Any] | str | None,
        caller: Caller | None,
        spends: bool,
    ) -> Answer:
        """Pay by x402 when the request carries a payment, else by credits when `spends`
        (`_spends_credits`), else the 402 quote."""
        if payment_header is not None:
            return await self._pay_x402(call, req)
        if caller is not None:
            await self.auth.consume_nonce(caller)
        if spends:
            assert caller is not None
            answer = await self._pay_credits(call, caller.agent_id)
            if answer is not None:
                return answer
        raise await self.gateway.payment_required(
            purpose=call.tool.name,
            description=call.tool.title,
            input_hash=call.input_hash,
            amount=call.price,
            resource_url=req.url,
        )

    async def run_paid(self, call: PreparedCall, agent_id: str, request_id: str) -> Any:
        """Run the tool itself; any exception is the tool's failure. How long it ran is kept
        on `call` for its receipt (the operator's latency figures)."""
        started = time.monotonic_ns()
        try:
            return (
                await self.runner.run(call.tool, call.value, request_id=request_id, agent_id=agent_id, meter=call)
            ).output
        finally:
            call.duration_ms = (time.monotonic_ns() - started) // 1_000_000

    def _success(self, call: PreparedCall, request_id: str, receipt_id: str, output: Any) -> Success:
        """`{success, data}`: `data` is `CallMeta`'s fields (made here as its builtins, in its
        order) followed by the tool's output."""
        data = {"request_id": request_id, "receipt_id": receipt_id, "status": "completed", "tool": call.tool.name}
        members = msgspec.structs.asdict(output) if _plain_struct(type(output)) else None
        if members is None or any(value is msgspec.UNSET for value in members.values()):
            data.update(msgspec.to_builtins(output))
        else:  # its members as they are: a Struct inside is encoded as its builtins would be
            data.update(members)
        return Success(data=data)

    def _failure(self, exc: BaseException, request_id: str, receipt_id: str) -> ServiceError:
        if isinstance(exc, ServiceError):  # a coded refusal found while running (tollway.Refusal)
            return ServiceError(
                exc.status,
                exc.code,
                exc.message,
                exc.details,
                headers=exc.headers,
                extra={**exc.extra, "request_id": request_id, "receipt_id": receipt_id},
            )
        if isinstance(exc, ToolError):
            return ServiceError(
                exc.status,
                exc.code,
                exc.message,
                exc.details,
                extra={"request_id": request_id, "receipt_id": receipt_id},
            )
        log.exception("tool failed (request %s)", request_id, exc_info=exc)
        return ServiceError(
            500,
            "internal_error",
            f"The call failed and was not charged (ref: {request_id}).",
            extra={"request_id": request_id, "receipt_id": receipt_id},
        )

    # -- credits ------------------------------------------------------------------
    async def _pay_credits(self, call: PreparedCall, agent_id: str) -> Answer | None:
        """None when the credits do not cover the price (the caller then gets a 402)."""
        tool = call.tool
        if tool.admit_payer is not None:  # the payer's own state, before the debit
            await tool.admit_payer(call.value, agent_id)
        request_id = sorted_id("req")
        if tool.mode == "job":  # charge, receipt and job row commit together
            async with self.db.transaction():
                if (
                    await ledger.debit_credits(agent_id, call.price, kind="spend", reference=request_id, memo=tool.name)
                    is None
                ):
                    return None
                receipt = await self._receipt(
                    call, agent_id, request_id, status="settled", execution="pending", method="credits", tx=None
                )
                await self._create_job(call, agent_id, request_id, receipt["receipt_id"])
            return await self._job_accepted(call, request_id, receipt["receipt_id"])
        # Inline. With a hold (tool.holds_credits): the debit and its hold commit together
        # before the run, and the hold ends (charged with its receipt, or refunded) with the
        # outcome, or the reconciler ends it if this process dies in between
        # (core/credits/holds.py). Without: the balance is read, the tool runs, and the
        # conditional debit commits with the receipt and the facts, so a process that dies
        # before that commit charged nothing and no lock or hold is kept while the tool runs;
        # credits another call of the agent spent meanwhile give None (the caller's 402) and
        # the output is not given.
        receipt_id = sorted_id("rcpt")
        if tool.holds_credits:
            if not await holds.take(
                self.db,
                request_id=request_id,
                agent_id=agent_id,
                amount=call.price,
                tool=tool.name,
                receipt_id=receipt_id,
                memo=call.memo,
                decision_context=call.decision_context,
            ):
                return None
        elif await ledger.credits_of(agent_id) < call.price:
            return None

        async def charged(outcome: str) -> bool:
            """Whether this process ends the call's charge as `outcome` (its receipt to write)."""
            if tool.holds_credits:
                return await holds.end(request_id, outcome)
            return (
                await ledger.debit_credits(agent_id, call.price, kind="spend", reference=request_id, memo=tool.name)
                is not None
            )

        try:
            output = await self.run_paid(call, agent_id, request_id)
        except Exception as exc:  # the tool failed: the charge is recorded, then refunded
            async with self.db.transaction():
                if await charged("refunded"):
                    await self._receipt(
                        call,
                        agent_id,
                        request_id,
                        status="settled",
                        execution="failed",
                        method="credits",
                        tx=None,
                        receipt_id=receipt_id,
                    )
                    await self.refunds.refund_to_credits(receipt_id, reason=getattr(exc, "code", "internal_error"))
            raise self._failure(exc, request_id, receipt_id) from exc
        async with self.db.transaction():
            if await charged("charged"):
                await self._receipt(
                    call,
                    agent_id,
                    request_id,
                    status="settled",
                    execution="completed",
                    method="credits",
                    tx=None,
                    receipt_id=receipt_id,
                )
            elif not tool.holds_credits:  # the debit found the credits spent: it wrote nothing
                return None
            # else the reconciler took this process for dead and refunded the hold
            # (its receipt says so): the answer is given, and it stays free.
            await self.runner.record(call.tool, call.value, output, agent_id)
        return Answer(200, self._success(call, request_id, receipt_id, output))

    # -- x402 ----------------------------------------------------------------------
    async def _pay_x402(self, call: PreparedCall, req: CallRequest) -> Answer:
        gateway = self.gateway
        tool = call.tool
        try:
            accepted = await gateway.accept(
                gateway.decoded(req), req.header("x-quote-id"), purpose=tool.name, input_hash=call.input_hash
            )
        except PaymentFailed as failure:
            raise await gateway.payment_required(
                purpose=tool.name,
                description=tool.title,
                input_hash=call.input_hash,
                amount=call.price,
                resource_url=req.url,
                failure=failure,
            ) from failure
        agent_id = await self.agents.for_wallet(accepted.payer)
        if tool.admit_payer is not None:  # the payer's own state, before settlement: refused, nothing moves
            try:
                await tool.admit_payer(call.value, agent_id)
            except ServiceError:
                await gateway.record(accepted, "voided")
                raise
        request_id = sorted_id("req")
        if tool.mode == "job":  # nothing to wait for: settle now, the job runs later
            return await self._settle_and_answer(call, req, accepted, agent_id, request_id, None)
        try:
            output = await self.run_paid(call, agent_id, request_id)
        except Exception as exc:  # not settled: nothing is charged
            receipt = await self._receipt(
                call,
                agent_id,
                request_id,
                status="not_charged",
                execution="failed",
                method="x402",
                tx=None,
                settled=False,
            )
            await gateway.record(accepted, "voided", None, receipt["receipt_id"])
            raise self._failure(exc, request_id, receipt["receipt_id"]) from exc
        return await self._settle_and_answer(call, req, accepted, agent_id, request_id, output)

    async def _settle_and_answer(
        self, call: PreparedCall, req: CallRequest, accepted: Accepted, agent_id: str, request_id: str, output: Any
    ) -> Answer:
        gateway = self.gateway
        # A backend that settles inside our database (the local network) shares one transaction
        # with the receipt; a remote one must never hold a transaction open across its HTTP call.
        result = None if getattr(gateway.backend, "settles_in_database", False) else await gateway.settle(accepted)
        settled = (
            None if result is not None else await self._settle_lookup(call, accepted, agent_id, request_id, output)
        )
        if settled is not None:
            result, receipt_id = settled
        else:
            try:
                result, receipt_id = await self._settle_and_record(call, accepted, agent_id, request_id, output, result)
            except AuthorizationVoided:  # the reconciler voided it while the tool ran: nothing moved
                voided = SettlementResult("failed", None, "authorization_voided")
                result, receipt_id = await self._settle_and_record(call, accepted, agent_id, request_id, output, voided)
        if result.status == "failed":
            failure = PaymentFailed(
                result.reason or "settlement_failed", f"The payment did not settle: {result.reason}."
            )
            raise await gateway.payment_required(
                purpose=call.tool.name,
                description=call.tool.title,
                input_hash=call.input_hash,
                amount=call.price,
                resource_url=req.url,
                failure=failure,
                settlement=gateway.settlement(accepted, result),
            )
        job = call.tool.mode == "job"
        answer = (
            await self._job_accepted(call, request_id, receipt_id, payment_pending=result.status == "pending")
            if job
            else Answer(200, self._success(call, request_id, receipt_id, output))
        )
        answer.settlement = gateway.settlement(accepted, result)
        return answer

    async def _settle_lookup(
        self, call: PreparedCall, accepted: Accepted, agent_id: str, request_id: str, output: Any
    ) -> tuple[SettlementResult, str] | None:
        """A lookup settled on the local network on PostgreSQL in one statement
        (core/payments/paid_settlement.py); None when that does not apply or wrote nothing:
        `_settle_and_record`'s transaction then settles and records."""
        gateway = self.gateway
        if call.tool.mode != "inline" or not paid_settlement.applies(gateway, accepted):
            return None
        tx = paid_settlement.transaction_of(gateway, accepted)
        draft = call.receipt(
            agent_id=agent_id,
            request_id=request_id,
            status="settled",
            execution_status="completed",
            payment_method="x402",
            settlement_tx=tx,
        )
        heads = observed_heads(call.tool, call.value, output, agent_id)
        receipt_id = await paid_settlement.settle_lookup(gateway, self.receipts, accepted, draft, heads)
        return None if receipt_id is None else (SettlementResult("settled", tx), receipt_id)

    async def _settle_and_record(
        self,
        call: PreparedCall,
        accepted: Accepted,
        agent_id: str,
        request_id: str,
        output: Any,
        result: SettlementResult | None,
    ) -> tuple[SettlementResult, str]:
        """One transaction: settle here when `result` is None, then the receipt, the authorization's state, the job or lookup."""
        async with self.db.transaction():
            settling_here = result is None
            if result is None:
                result = await self.gateway.settle_in_transaction(accepted)
            settled, job = result.status == "settled", call.tool.mode == "job"
            receipt = await self._receipt(
                call,
                agent_id,
                request_id,
                status="settled" if settled else ("not_charged" if result.status == "failed" else "pending"),
                execution="pending" if job and result.status != "failed" else "completed",
                method="x402",
                tx=result.transaction,
                settled=settled,
            )
            await self.gateway.record(
                accepted, result.status, result.transaction, receipt["receipt_id"], reserved=settling_here
            )
            if job and result.status != "failed":
                await self._create_job(call, agent_id, request_id, receipt["receipt_id"], settled=settled)
            if not job and result.status != "failed":
                await self.runner.record(call.tool, call.value, output, agent_id)
        return result, receipt["receipt_id"]

    # -- jobs ------------------------------------------------------------------------
    async def _create_job(
        self, call: PreparedCall, agent_id: str, request_id: str, receipt_id: str, *, settled: bool = True
    ) -> None:
        """The job row (and the tool's acceptance rows once paid): a job whose payment is
        still pending waits for it and starts only when it settles (core/jobs/job_payments.py)."""
        await job_payments.accept(
            call.tool,
            value=call.value,
            price=call.price,
            agent_id=agent_id,
            request_id=request_id,
            receipt_id=receipt_id,
            settled=settled,
            bus=self.events,
        )

    async def _job_accepted(
        self, call: PreparedCall, request_id: str, receipt_id: str, *, payment_pending: bool = False
    ) -> Answer:
        """202, not wrapped in {success, data} (docs/api.md); workers are woken after the commit
        (a job waiting for its payment is woken by the reconciler once the payment settles)."""
        poll = f"Poll GET /v1/requests/{request_id} or subscribe at /v1/requests/subscribe."
        if payment_pending:
            message = f"Accepted; the payment has not settled yet, and the job starts once it has (it fails, charged nothing, if it never does). {poll}"
        else:
            await publish_unless_in_sql(self.events, JOBS_NEW, request_id)
            message = f"Accepted. {poll}"
        body = JobAccepted(
            request_id=request_id,
            tool=call.tool.name,
            status="pending" if payment_pending else call.tool.accepted_status,
            receipt_id=receipt_id,
            message=message,
        )
        if call.tool.accepted_fields is not None:  # the tool's keys ride the answer's slot
            body = extended(body, call.tool.accepted_fields(request_id))
        return Answer(202, body, {})

    async def _receipt(
        self,
        call: PreparedCall,
        agent_id: str,
        request_id: str,
        *,
        status: str,
        execution: str,
        method: str,
        tx: str | None,
        settled: bool = True,
        receipt_id: str | None = None,
    ) -> dict[str, Any]:
        return await self.receipts.issue(
            call.receipt(
                agent_id=agent_id,
                request_id=request_id,
                status=status,
                execution_status=execution,
                payment_method=method,
                settlement_tx=tx,
                settled=settled,
                receipt_id=receipt_id,
            )
        )


__all__ = ["PaidCalls", "PreparedCall", "input_hash_of"]
