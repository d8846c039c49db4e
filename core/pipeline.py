"""The paid-call pipeline (docs/architecture.md): validate, price, pay (credits or x402),
run, sign the receipt; refund or leave unsettled when the tool fails.

Input is refused before any payment; an x402 payment is settled only after an
inline tool succeeded; credits are taken before the tool runs and given back if
it fails.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
import rfc8785

from . import holds, jobs, ledger
from .auth import Caller
from .events import JOBS_NEW
from .idempotency import check_key, hash_body, missing_key
from .rate_identity import payer_of, rate_key
from .errors import ServiceError
from .ids import new_id
from .payments.gateway import Accepted, PaymentFailed, find_payment_header
from .request import Answer, CallRequest
from .tool import Tool, ToolContext, ToolError
from .validation import FieldError, FieldErrors, Problem, convert, decode_object, field_error
from .wire.calls import CallMeta, JobAccepted, Success

if TYPE_CHECKING:
    from .kernel import Kernel

log = logging.getLogger("tollway.pipeline")

MEMO_MAX = 1000


@dataclasses.dataclass
class PreparedCall:
    tool: Tool
    value: Any  # the validated input Struct
    price: int
    input_hash: str
    memo: str | None
    decision_context: dict[str, Any] | None
    provider_cost: int | None = None  # reported by the tool while it runs


_SORTED = msgspec.json.Encoder(order="sorted")


def input_hash_of(value: Any) -> str:
    """A stable hash of a validated input: a quote pays only for the exact input
    it was made for. Never signed or shown, so msgspec's sorted-key encoding
    (deterministic, ten times faster than RFC 8785) is enough here."""
    return hashlib.sha256(_SORTED.encode(value)).hexdigest()


def _audit_fields(obj: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None, list[Problem]]:
    """Take the audit fields out of `obj`; their problems are reported with the input's."""
    memo = obj.pop("memo", None)
    ctx = obj.pop("decisionContext", None)
    problems: list[Problem] = []
    if memo is not None and (not isinstance(memo, str) or len(memo) > MEMO_MAX):
        problems.append(Problem("memo", f"memo must be a string of at most {MEMO_MAX} characters"))
    if ctx is not None and not isinstance(ctx, dict):
        problems.append(Problem("decisionContext", "decisionContext must be an object"))
    elif ctx is not None:
        try:  # it is signed into the receipt: refuse what RFC 8785 cannot canonicalise, before payment
            rfc8785.dumps(ctx)
        except Exception:
            problems.append(Problem("decisionContext", "decisionContext holds a value that cannot be signed: integers must be within ±(2^53-1)"))
        conf = ctx.get("confidence")
        if conf is not None and (isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1):
            problems.append(Problem("decisionContext.confidence", "decisionContext.confidence must be a number from 0 to 1"))
    return memo, ctx, problems


def _spends_credits(caller: Caller | None, req: CallRequest) -> bool:
    """Credits pay when the caller may spend them and did not ask for x402."""
    prefers_x402 = (req.header("x-payment-method") or "").strip().lower() == "x402"
    return caller is not None and caller.can_spend and not prefers_x402


class PaidCallPipeline:
    """Mixin of `Kernel`: the one pipeline every front calls."""

    def prepare(self: "Kernel", tool: Tool, body: bytes) -> PreparedCall:
        """Validate and price: everything that must happen before payment."""
        obj = decode_object(body)
        memo, ctx, audit = _audit_fields(obj)
        # every failing field is named, the audit fields' too; shape errors of
        # `invalid_input` tools carry a `code`
        value = convert(obj, tool.input_type, error=tool.shape_error, also=audit)
        if tool.check is not None:
            try:
                tool.check(value)
            except (FieldError, FieldErrors) as exc:
                raise field_error(exc) from exc
        return PreparedCall(tool, value, tool.quote(value), input_hash_of(value), memo, ctx)

    async def call(self: "Kernel", tool_name: str, req: CallRequest) -> Answer:
        """One paid tool call, counted against the tool's rate-limit category; the
        `RateLimit-*` headers go on the answer and on every refusal."""
        tool = self.tools.get(tool_name)
        if tool is None:
            raise ServiceError(404, "invalid_input", f"Unknown tool {tool_name!r}.")
        return await self.limited(tool.rate_limit, req, lambda: self._call(tool, req))

    async def limited(self: "Kernel", category: str, req: CallRequest, run: Callable[[], Awaitable[Any]]) -> Any:
        """Count `req` in `category` (per proven identity, else per IP: core/rate_identity.py),
        then run; headers on every outcome.

        Returns what `run` returns; an `Answer` gets the headers added, any other
        value is returned with them as `(value, headers)`.
        """
        state = await self.rate_limiter.hit(category, await rate_key(self, req))
        if not state.allowed:
            raise state.exceeded()
        try:
            result = await run()
        except ServiceError as exc:
            exc.headers.update(state.headers())
            raise
        if isinstance(result, Answer):
            result.headers.update(state.headers())
            return result
        return result, state.headers()

    async def _call(self: "Kernel", tool: Tool, req: CallRequest) -> Answer:
        key = req.header("idempotency-key") if tool.idempotency != "ignored" else None
        if key is not None:
            check_key(key)
        elif tool.idempotency == "required":
            raise missing_key()
        call = self.prepare(tool, req.body)
        payment_header = find_payment_header(req.headers)
        caller = None if payment_header else await self.auth.caller(req, scope="write", consume_nonce=False)
        if key is None:
            return await self._pay_and_run(call, req, payment_header, caller)
        identity = payer_of(self, req, payment_header) if payment_header else (caller.agent_id if _spends_credits(caller, req) else None)
        if identity is None:  # nothing will execute (a 402 quote): the key is not claimed
            return await self._pay_and_run(call, req, payment_header, caller)
        begin = await self.idempotency.begin(f"{tool.name}:{identity}", key, hash_body(req.body))
        if begin.kind == "replay":
            return Answer(begin.status, begin.body, dict(begin.headers))
        try:
            answer = await self._pay_and_run(call, req, payment_header, caller)
        except ServiceError as exc:
            if exc.status in (401, 402):  # the payment or proof was refused: nothing ran
                await self.idempotency.abandon(begin.token)
            else:  # errors after execution began are replayed like answers
                await self.idempotency.finish(begin.token, exc.status, exc.body(), exc.headers)
            raise
        except BaseException:
            await self.idempotency.abandon(begin.token)
            raise
        await self.idempotency.finish(begin.token, answer.status, answer.body, answer.headers)
        return answer

    async def _pay_and_run(self: "Kernel", call: PreparedCall, req: CallRequest, payment_header: str | None, caller: Caller | None) -> Answer:
        if payment_header:
            return await self._pay_x402(call, req, payment_header)
        if caller is not None:
            await self.auth.consume_nonce(caller)
        if _spends_credits(caller, req):
            assert caller is not None
            answer = await self._pay_credits(call, caller.agent_id)
            if answer is not None:
                return answer
        assert self.gateway is not None
        raise await self.gateway.payment_required(
            purpose=call.tool.name, description=call.tool.title, input_hash=call.input_hash, amount=call.price, resource_url=req.url
        )

    async def run_paid(self: "Kernel", call: PreparedCall, agent_id: str, request_id: str) -> Any:
        """Run the tool itself; any exception is the tool's failure."""
        assert self.http is not None
        ctx = ToolContext(request_id=request_id, agent_id=agent_id, http=self.http, settings=self.family_settings(call.tool.family))
        try:
            return await call.tool.run(call.value, ctx)
        finally:
            call.provider_cost = ctx.provider_cost

    def _success(self: "Kernel", call: PreparedCall, request_id: str, receipt_id: str, output: Any) -> Success:
        meta = CallMeta(request_id=request_id, receipt_id=receipt_id, status="completed", tool=call.tool.name)
        return Success(data={**msgspec.to_builtins(meta), **msgspec.to_builtins(output)})

    def _failure(self, exc: BaseException, request_id: str, receipt_id: str) -> ServiceError:
        if isinstance(exc, ToolError):
            return ServiceError(exc.status, exc.code, exc.message, exc.details, extra={"request_id": request_id, "receipt_id": receipt_id})
        log.exception("tool failed (request %s)", request_id, exc_info=exc)
        return ServiceError(
            500, "internal_error", f"The call failed and was not charged (ref: {request_id}).", extra={"request_id": request_id, "receipt_id": receipt_id}
        )

    # -- credits ------------------------------------------------------------------
    async def _pay_credits(self: "Kernel", call: PreparedCall, agent_id: str) -> Answer | None:
        """None when the credits do not cover the price (the caller then gets a 402)."""
        tool = call.tool
        request_id = new_id("req")
        if tool.mode == "job":  # charge, receipt and job row commit together
            async with self.db.transaction():
                if await ledger.debit_credits(agent_id, call.price, kind="spend", reference=request_id, memo=tool.name) is None:
                    return None
                receipt = await self._receipt(call, agent_id, request_id, status="settled", execution="pending", method="credits", tx=None)
                await self._create_job(call, agent_id, request_id, receipt["receipt_id"])
            return await self._job_accepted(call, request_id, receipt["receipt_id"])
        # Inline: the debit and its hold commit together; the hold ends (charged with
        # its receipt, or refunded) with the outcome, or the reconciler ends it if
        # this process dies in between (core/holds.py).
        receipt_id = new_id("rcpt")
        async with self.db.transaction():
            if await ledger.debit_credits(agent_id, call.price, kind="spend", reference=request_id, memo=tool.name) is None:
                return None
            await holds.place(
                request_id=request_id, agent_id=agent_id, amount=call.price, tool=tool.name, receipt_id=receipt_id,
                memo=call.memo, decision_context=call.decision_context,
            )
        try:
            output = await self.run_paid(call, agent_id, request_id)
        except Exception as exc:  # the tool failed: the charge is recorded, then refunded
            async with self.db.transaction():
                if await holds.end(request_id, "refunded"):
                    await self._receipt(call, agent_id, request_id, status="settled", execution="failed", method="credits", tx=None, receipt_id=receipt_id)
                    await self.refund_to_credits(receipt_id, reason=getattr(exc, "code", "internal_error"))
            raise self._failure(exc, request_id, receipt_id) from exc
        async with self.db.transaction():
            if await holds.end(request_id, "charged"):
                await self._receipt(call, agent_id, request_id, status="settled", execution="completed", method="credits", tx=None, receipt_id=receipt_id)
            # else the reconciler took this process for dead and refunded the hold
            # (its receipt says so): the answer is given, and it stays free.
        return Answer(200, self._success(call, request_id, receipt_id, output))

    # -- x402 ----------------------------------------------------------------------
    async def _pay_x402(self: "Kernel", call: PreparedCall, req: CallRequest, header: str) -> Answer:
        gateway = self.gateway
        assert gateway is not None
        tool = call.tool
        try:
            accepted = await gateway.accept(header, req.header("x-quote-id"), purpose=tool.name, input_hash=call.input_hash)
        except PaymentFailed as failure:
            raise await gateway.payment_required(
                purpose=tool.name, description=tool.title, input_hash=call.input_hash, amount=call.price, resource_url=req.url, failure=failure
            ) from failure
        agent_id = await self.agents.for_wallet(accepted.payer)
        request_id = new_id("req")
        if tool.mode == "job":  # nothing to wait for: settle now, the job runs later
            return await self._settle_and_answer(call, req, accepted, agent_id, request_id, None)
        try:
            output = await self.run_paid(call, agent_id, request_id)
        except Exception as exc:  # not settled: nothing is charged
            receipt = await self._receipt(call, agent_id, request_id, status="not_charged", execution="failed", method="x402", tx=None, settled=False)
            await gateway.record(accepted, "voided", None, receipt["receipt_id"])
            raise self._failure(exc, request_id, receipt["receipt_id"]) from exc
        return await self._settle_and_answer(call, req, accepted, agent_id, request_id, output)

    async def _settle_and_answer(
        self: "Kernel", call: PreparedCall, req: CallRequest, accepted: Accepted, agent_id: str, request_id: str, output: Any
    ) -> Answer:
        gateway = self.gateway
        assert gateway is not None
        # A backend that settles inside our database (the local network) shares one
        # transaction with the receipt; a remote one must never hold a transaction
        # open across its HTTP call.
        local = getattr(gateway.backend, "settles_in_database", False)
        async with self.db.transaction() if local else contextlib.nullcontext():
            result = await gateway.settle(accepted)
            settled = result.status == "settled"
            job = call.tool.mode == "job"
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
            await gateway.record(accepted, result.status, result.transaction, receipt["receipt_id"])
            if job and result.status != "failed":
                await self._create_job(call, agent_id, request_id, receipt["receipt_id"])
        if result.status == "failed":
            failure = PaymentFailed(result.reason or "settlement_failed", f"The payment did not settle: {result.reason}.")
            raise await gateway.payment_required(
                purpose=call.tool.name, description=call.tool.title, input_hash=call.input_hash, amount=call.price, resource_url=req.url, failure=failure
            )
        headers = {"PAYMENT-RESPONSE": gateway.payment_response(accepted, result)}
        if call.tool.mode == "job":
            answer = await self._job_accepted(call, request_id, receipt["receipt_id"])
            answer.headers.update(headers)
            return answer
        return Answer(200, self._success(call, request_id, receipt["receipt_id"], output), headers)

    # -- jobs ------------------------------------------------------------------------
    async def _create_job(self: "Kernel", call: PreparedCall, agent_id: str, request_id: str, receipt_id: str) -> None:
        await jobs.create(
            job_id=request_id, tool=call.tool.name, agent_id=agent_id, input_json=msgspec.json.encode(call.value).decode(), receipt_id=receipt_id,
            bus=self.events,
        )

    async def _job_accepted(self: "Kernel", call: PreparedCall, request_id: str, receipt_id: str) -> Answer:
        """202, not wrapped in {success, data} (docs/api.md); workers are woken after the commit."""
        await self._publish_unless_in_sql(JOBS_NEW, request_id)
        body = JobAccepted(
            request_id=request_id,
            tool=call.tool.name,
            status=call.tool.accepted_status,
            receipt_id=receipt_id,
            message=f"Accepted. Poll GET /v1/requests/{request_id} or subscribe at /v1/requests/subscribe.",
        )
        return Answer(202, body, {})

    async def _receipt(
        self: "Kernel",
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
            receipt_id=receipt_id,
            agent_id=agent_id,
            category=call.tool.category,
            subcategory=call.tool.subcategory or call.tool.name,
            amount=call.price,
            status=status,
            execution_status=execution,
            settlement_tx=tx,
            payment_method=method,
            tool=call.tool.name,
            request_id=request_id,
            memo=call.memo,
            decision_context=call.decision_context,
            provider_cost=call.provider_cost,
            settled=settled,
        )


__all__ = ["PaidCallPipeline", "PreparedCall", "input_hash_of"]
