"""Before any payment: the input validated (audit fields included) and priced."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any, cast

import msgspec
import rfc8785

from tollway._core.basics.json_values import JSONValue
from tollway._core.basics.validation import (
    FieldError,
    FieldErrors,
    Problem,
    convert,
    decode_object,
    field_error,
    one_of_problems,
)
from tollway._core.plugin_api.tool import Tool
from tollway._core.receipts.receipts import ReceiptDraft

MEMO_MAX = 1000


@dataclasses.dataclass(frozen=True)
class Admission:
    """What a tool's `admit` check may fix about a call before payment, written on its
    receipt: the soul agent sold through (`soul_agent_id`), the platform's part of the
    price (`service_fee`, micro-USDC) and keys added to the receipt's `decisionContext`
    (`decision_context`, e.g. people research's `purpose`; they replace the caller's keys
    of the same name)."""

    soul_agent_id: str | None = None
    service_fee: int = 0
    decision_context: Mapping[str, JSONValue] | None = None


@dataclasses.dataclass
class PreparedCall:
    tool: Tool
    value: Any  # the validated input Struct
    price: int
    memo: str | None
    decision_context: dict[str, Any] | None
    provider_cost: int | None = None  # reported by the tool while it runs
    admission: Admission = Admission()
    duration_ms: int | None = None  # how long the tool ran, once it has (stored beside the receipt)
    _input_hash: str | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def input_hash(self) -> str:
        """`input_hash_of` the input, made when first asked: only an x402 payment (checked
        before the run) and a 402 quote need it, never a call paid from credits."""
        if self._input_hash is None:
            self._input_hash = input_hash_of(self.value)
        return self._input_hash

    def admit(self, admitted: Any) -> None:
        """Keep what the tool's `admit` check answered (an `Admission`, or None)."""
        if isinstance(admitted, Admission):
            if not 0 <= admitted.service_fee <= self.price:
                raise ValueError(f"tool {self.tool.name}: service_fee must be within the price")
            self.admission = admitted
            if admitted.decision_context:
                self.decision_context = {**(self.decision_context or {}), **admitted.decision_context}

    def receipt(
        self,
        *,
        agent_id: str,
        request_id: str,
        status: str,
        execution_status: str,
        payment_method: str,
        settlement_tx: str | None = None,
        settled: bool = True,
        receipt_id: str | None = None,
        goal_id: str | None = None,
        duration_ms: int | None = None,
    ) -> ReceiptDraft:
        """The draft of this call's receipt: the tool, price and audit fields, with the signed
        fields plugins fill: the goal (given, or the one of the job tool's `accepted_fields`),
        the soul and the fee (its `Admission`)."""
        tool = self.tool
        if goal_id is None and tool.accepted_fields is not None:
            goal_id = cast("str | None", tool.accepted_fields(request_id).get("goal_id"))  # compute's goal id
        return ReceiptDraft(
            agent_id=agent_id,
            category=tool.category,
            subcategory=tool.subcategory or tool.name,
            amount=self.price,
            status=status,
            execution_status=execution_status,
            settlement_tx=settlement_tx,
            payment_method=payment_method,
            tool=tool.name,
            request_id=request_id,
            memo=self.memo,
            decision_context=self.decision_context,
            provider_cost=self.provider_cost,
            settled=settled,
            receipt_id=receipt_id,
            goal_id=goal_id,
            soul_agent_id=self.admission.soul_agent_id,
            service_fee=self.admission.service_fee,
            duration_ms=self.duration_ms if duration_ms is None else duration_ms,
        )


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
            problems.append(
                Problem(
                    "decisionContext",
                    "decisionContext holds a value that cannot be signed: integers must be within ±(2^53-1)",
                )
            )
        conf = ctx.get("confidence")
        if conf is not None and (isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1):
            problems.append(
                Problem("decisionContext.confidence", "decisionContext.confidence must be a number from 0 to 1")
            )
    return memo, ctx, problems


def prepare(tool: Tool, body: bytes) -> PreparedCall:
    """Validate and price: everything that must happen before payment."""
    obj = decode_object(body)
    memo, ctx, audit = _audit_fields(obj)
    # every failing field is named, the audit fields' too, and a declared exactly-one-of
    # group broken beside a shape error (the tool's check names it otherwise); shape
    # errors of `invalid_input` tools carry a `code`
    value = convert(
        obj, tool.input_type, error=tool.shape_error, also=audit, besides=one_of_problems(obj, tool.exactly_one_of)
    )
    if tool.check is not None:
        try:
            tool.check(value)
        except (FieldError, FieldErrors) as exc:
            raise field_error(exc) from exc
    return PreparedCall(tool, value, tool.quote(value), memo, ctx)


__all__ = ["Admission", "MEMO_MAX", "PreparedCall", "input_hash_of", "prepare"]
