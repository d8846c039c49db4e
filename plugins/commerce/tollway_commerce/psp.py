"""The `psp` provider kind: a payment service provider that charges a delegated payment token
(ACP's delegated payment: the agent platform hands the merchant a token bound to an amount, a
currency and an expiry). A `psp` client has three calls, each safe to repeat with its key:

- `charge(amount, currency, token, key, metadata)`: one payment for `amount` minor units,
  created and confirmed at once; the same `key` answers the same payment again (the PSP's own
  idempotency), which is also how the reconciler finds a payment it never heard back about;
- `authenticate(payment, authentication, key)`: confirm a payment that asked for 3-D Secure
  with the agent's authentication result;
- `refund(payment, key)`: give the whole payment back;
- `refund_amount(payment, amount, key, metadata)`: give back `amount` minor units of it (an
  operator's refund of an order, in full or in part), answering a `RefundResult`.

Each answers a `Charge`: `succeeded`, `requires_action` (3-D Secure: the session's
`authentication_required`), `declined` (nothing taken: the agent may pay again) or
`processing` (not known yet: left to the reconciler)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import msgspec

KIND = "psp"

ChargeStatus = Literal["succeeded", "requires_action", "declined", "processing"]


class Charge(msgspec.Struct, kw_only=True):
    id: str  # the PSP's payment id (Stripe: a PaymentIntent's pi_...), "" when none was made
    status: ChargeStatus
    amount: int = 0
    currency: str = ""
    decline_code: str | None = None  # why it was declined, as the PSP says (card_declined, insufficient_funds...)
    message: str | None = None
    next_action: dict[str, Any] | None = None  # what the PSP asks of the buyer (requires_action)
    refunded: int = 0


class RefundResult(msgspec.Struct, kw_only=True):
    id: str  # the PSP's refund id (Stripe: re_...)
    status: Literal["succeeded", "pending", "failed", "canceled", "requires_action"]
    amount: int
    currency: str


class PspError(Exception):
    """The PSP could not be asked or did not answer usably: nothing is known of the payment."""


class PspRefused(PspError):
    """The PSP answered, and refused: nothing was done (a refund above what is left, a payment it
    does not know)."""


class Psp(Protocol):
    name: str  # the provider's name, written on receipts as `psp:<name>`

    async def charge(
        self, *, amount: int, currency: str, token: str, key: str, metadata: Mapping[str, str]
    ) -> Charge: ...

    async def authenticate(self, *, payment: str, authentication: Mapping[str, Any], key: str) -> Charge: ...

    async def refund(self, *, payment: str, key: str) -> Charge: ...

    async def refund_amount(
        self, *, payment: str, amount: int, key: str, metadata: Mapping[str, str]
    ) -> RefundResult: ...

    async def retrieve(self, payment: str) -> Charge: ...

    def handler_config(self) -> dict[str, Any]: ...
