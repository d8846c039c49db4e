"""`KernelPlatform`: the kernel services a plugin's own resources may use beside its tools
(transactions, notifications, the webhook outbox, webhook target rules, inbound messages,
providers, parked jobs, sales, payouts, delegated calls): the concrete `tollway.Platform`,
handed to plugins as `PluginContext.platform` and to routes as `RouteCall.platform`.
The one movement of money here gives back the unused part of a settled charge."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import httpx
import msgspec

from tollway._core.basics.events import EventBus
from tollway._core.credits import operator_reads
from tollway._core.jobs import cancel, notifications
from tollway._core.jobs import job_events as event_rows
from tollway._core.jobs import operator_reads as job_reads
from tollway._core.plugin_api.context import JSONObject, JSONValue, Transactions
from tollway._core.receipts import figures
from tollway._core.storage import sql
from tollway._core.watches import operator_reads as watch_reads
from tollway._core.webhooks import operator_reads as webhook_reads
from tollway._core.webhooks import outbox, redelivery
from tollway._core.webhooks.signing import SIGNINGS, new_secret, sign, verify
from tollway._core.webhooks.targets import target_problem

if TYPE_CHECKING:
    from tollway._core.auth.tokens import AccessTokens
    from tollway._core.calls.delegated import DelegatedCalls
    from tollway._core.credits.accounts import Accounts
    from tollway._core.credits.payouts import Payouts
    from tollway._core.credits.refunds import Refunds
    from tollway._core.credits.sales import Sales
    from tollway._core.jobs.parked import ParkedJobs
    from tollway._core.messages.inbound import Inbound, InboundMessage
    from tollway._core.operator.installed import Installed
    from tollway._core.plugin_api.operator_pages import OperatorPage
    from tollway._core.plugin_api.providers import Providers
    from tollway._core.receipts.receipts import ReceiptBook


_AGENT_EXISTS = "SELECT id FROM tw_agents WHERE id = {}"
# What `Platform.webhook` shows a plugin of an outbox row: its delivery state, no secret.
_WEBHOOK_STATE = ("id", "kind", "subject", "state", "attempts", "next_attempt_ms", "created_ms", "updated_ms")


@dataclasses.dataclass(frozen=True)
class KernelPlatform:
    db: Transactions
    events: EventBus
    allow_insecure_webhooks: bool
    settings_of: Callable[[str], Mapping[str, str]]  # family -> its settings by name
    http: httpx.AsyncClient  # the service's shared client
    providers: Providers
    inbound: Inbound
    refunds: Refunds
    delegated: DelegatedCalls  # the service's tools, called for an agent from a goal's budget
    receipts: ReceiptBook  # issuing and re-signing receipts
    parked: ParkedJobs  # outcomes of jobs a run handed to someone else
    sales: Sales  # a seller's share of a charge
    payouts: Payouts  # credits withdrawn to a wallet
    accounts: Accounts  # the operator's account work: granting credits, the pending report
    operator_token_check: Callable[[str], bool]  # whether a text is the operator token (constant time)
    tokens: AccessTokens  # agents' access tokens for the operator: listed, revoked
    installed: Installed  # the plugins, their tools and routes, the providers and their health
    pages: Mapping[str, OperatorPage]  # the operator pages the plugins registered, by name

    async def finish_job(self, job_id: str, result: JSONValue) -> bool:
        """Complete a parked job (its run answered `tollway.Parked`) with `result`; False when
        it already has an outcome. In the caller's transaction when there is one."""
        return await self.parked.finish(job_id, result)

    async def fail_job(self, job_id: str, code: str, message: str) -> bool:
        """Fail a parked job with a failure code (refunded as its tool says); False when it
        already has an outcome."""
        return await self.parked.fail(job_id, code, message)

    async def pay_share(self, receipt_id: str, *, seller_agent_id: str, share: int) -> JSONObject | None:
        """Credit a seller `share` (micro-USDC) of a settled charge, the rest being the
        service's fee, and issue the seller's receipt; 409 when the charge is not settled."""
        return await self.sales.pay_share(receipt_id, seller_agent_id=seller_agent_id, share=share)

    async def record_outside_sale(
        self,
        *,
        agent_id: str,
        amount: int,
        payment_method: str,
        payment_reference: str,
        category: str,
        subcategory: str | None,
        tool: str,
        request_id: str,
        credit: int = 0,
        soul_agent_id: str | None = None,
        service_fee: int = 0,
        memo: str | None = None,
    ) -> JSONObject:
        """A sale paid outside the service (a PSP charge): the buyer's settled receipt and,
        when `credit` is given, that much credited to the buyer; in the caller's transaction.
        The parameters are spelled out: `tollway.Platform` is held to them (test_public_package)."""
        sale = dict(locals())
        del sale["self"]
        return await self.sales.record_outside_sale(**sale)

    async def refund_outside_sale(
        self, receipt_id: str, *, refund_id: str, amount: int, payment_reference: str, reason: str
    ) -> JSONObject:
        """The seller's side of a refund of part or all (`amount` micro-USDC) of an outside sale
        already refunded outside: what it bought (credits) and paid (a seller's share) taken back
        in proportion, never below a zero balance, and the buyer's `refund` receipt; refunds
        never add up above the sale; once per `refund_id`. In the caller's transaction.
        Answers `{receipt, credits_taken, share_taken}`."""
        return await self.sales.refund_outside_sale(
            receipt_id, refund_id=refund_id, amount=amount, payment_reference=payment_reference, reason=reason
        )

    async def credit_outside_refund(
        self, receipt_id: str, *, refund_id: str, amount: int, limit: int, reason: str
    ) -> JSONObject | None:
        """The buyer's side of a refund an outside seller made of a purchase paid by `receipt_id`:
        `amount` (micro-USDC) credited to its agent, never more in all than `limit`, with a
        `refund` receipt; None when `refund_id` was credited already or nothing is left."""
        return await self.sales.credit_outside_refund(
            receipt_id, refund_id=refund_id, amount=amount, limit=limit, reason=reason
        )

    @staticmethod
    async def agent_exists(agent_id: str) -> bool:
        """Whether `agent_id` names an agent of this service (one credits can be given to)."""
        return await sql.fetch_one(_AGENT_EXISTS, agent_id) is not None

    async def pay_out(self, agent_id: str, amount: int, to_address: str) -> JSONObject:
        """Withdraw `amount` (micro-USDC) of an agent's credits to a wallet, on-chain."""
        return await self.payouts.pay_out(agent_id, amount, to_address)

    async def payouts_of(self, agent_id: str, *, limit: int = 50, offset: int = 0) -> list[JSONObject]:
        """An agent's payouts, newest first."""
        return await self.payouts.of_agent(agent_id, limit=limit, offset=offset)

    async def return_unspent(self, receipt_id: str, amount: int, *, reason: str) -> JSONObject | None:
        """Give back the unused part (micro-USDC) of a settled charge to its payer's credits,
        once per receipt, re-signing the receipt (`returned_usdc`); in the caller's transaction."""
        return await self.refunds.return_unspent(receipt_id, amount, reason=reason)

    def is_operator_token(self, given: str) -> bool:
        """Whether `given` is the operator token (TOLLWAY_OPERATOR_TOKEN), compared in constant
        time: how a page of the operator's (the console) signs the operator in."""
        return self.operator_token_check(given)

    async def grant_credits(self, agent_id: str, amount: int, memo: str | None) -> JSONObject:
        """Grant `amount` (micro-USDC) of credits to an agent, as the operator route
        POST /v1/tools/internal/credits/grant does (a `grant` ledger row, a notification):
        `{agent_id, credits_balance, transaction_id}`."""
        return msgspec.to_builtins(await self.accounts.grant(agent_id, amount, memo))

    async def pending_money(self) -> JSONObject:
        """Money in an intermediate state now, each item with its age and why, as the operator
        route GET /v1/tools/internal/pending answers it."""
        return msgspec.to_builtins(await self.accounts.pending_report())

    @staticmethod
    async def revenue_per_day(since_ms: int) -> list[JSONObject]:
        """Revenue from the day of `since_ms` on, `{day, category, payment_method, total}` per
        day (since 1970-01-01, UTC), category and payment method, micro-USDC."""
        return await figures.revenue(since_ms)

    @staticmethod
    async def calls_per_minute(since_ms: int) -> list[JSONObject]:
        """Paid calls from `since_ms` on, `{minute, calls, errors}` per minute (since the epoch) with calls."""
        return await figures.calls(since_ms)

    @staticmethod
    async def tool_latency(since_ms: int) -> list[JSONObject]:
        """Each tool's calls from `since_ms` on with their run time: `{tool, calls, p50_ms, p99_ms}`."""
        return await figures.latency(since_ms)

    @staticmethod
    async def credits_outstanding() -> str:
        """What every agent's credits add up to (USDC): what the service owes its agents."""
        return await figures.outstanding()

    # Every agent's receipts, newest first, filtered, by keyset: `{receipts, next}`.
    receipts_page = staticmethod(figures.receipts_page)

    async def receipt_revisions(self, receipt_id: str) -> list[JSONObject]:
        """Every signed revision of a receipt as served, oldest first, the current one last ([] when none)."""
        return await self.receipts.revisions(receipt_id)

    async def receipt_keys(self) -> list[JSONObject]:
        """The published receipt signing keys, as GET /v1/receipts/keys serves them."""
        return msgspec.to_builtins(await self.receipts.keys())["keys"]

    # The agents holding the most credits, most first: `[{agent_id, name, wallet_address, credits_balance, created_at}]`.
    agents_by_credits = staticmethod(operator_reads.agents_by_credits)
    # An agent (by id or wallet) with its credits and latest ledger rows, newest first; None when unknown.
    agent_account = staticmethod(operator_reads.agent_account)

    # Jobs for the operator: `[{status, count}]`, the oldest unfinished ones, and one job's record
    # (never its input or result).
    job_counts = staticmethod(job_reads.job_counts)
    unfinished_jobs = staticmethod(job_reads.unfinished_jobs)
    job_record = staticmethod(job_reads.job_record)

    # The webhook outbox and the watches for the operator: counts by state, the outbox newest
    # first with each webhook's last attempt, one webhook with its attempts (never its secret,
    # body or URL path), the latest watch deliveries; and queueing a given-up webhook again.
    webhook_counts = staticmethod(webhook_reads.webhook_counts)
    webhooks_page = staticmethod(webhook_reads.webhooks_page)
    webhook_entry = staticmethod(webhook_reads.webhook_entry)
    watch_counts = staticmethod(watch_reads.watch_counts)
    watch_delivery_counts = staticmethod(watch_reads.watch_delivery_counts)
    latest_watch_deliveries = staticmethod(watch_reads.latest_watch_deliveries)

    async def redeliver_webhook(self, webhook_id: str) -> JSONObject | None:
        """Queue a given-up (abandoned) webhook again, due now with a fresh budget of attempts,
        its history kept: `{queued, state, reason}` (a pending or delivered one is refused and
        left as it is); None when unknown."""
        return await redelivery.redeliver(webhook_id, self.events)

    async def access_tokens(self, agent_ref: str, limit: int) -> JSONObject | None:
        """`{tokens, revocation_bound_s}`: an agent's (by id or wallet) latest access tokens,
        newest first, by their public id (never the token or its hash), each `{token_id, origin,
        created_at, expires_at, expired, revoked_at}`, and the longest a revocation takes to
        reach every process; None when there is no such agent."""
        return await self.tokens.of_agent(agent_ref, limit)

    async def revoke_access_token(self, agent_id: str, token_id: str) -> str | None:
        """Revoke an agent's access token by its id: refused 401 `invalid_access_token` at once in
        this process, within `TOKEN_RECHECK_S` in the others. When it was revoked (the first time:
        revoking twice changes nothing), or None when the agent has no such token."""
        return await self.tokens.revoke(agent_id, token_id)

    def installed_plugins(self) -> JSONObject:
        """`{plugins, failures}`: each plugin with its distribution, version, tools (path, price,
        category, mode) and routes count; the plugins that failed to load, their errors redacted."""
        return self.installed.plugins()

    def provider_status(self) -> list[JSONObject]:
        """Each provider kind: the chosen provider, configured or not, the missing settings' names (never a value)."""
        return self.installed.provider_status()

    async def check_providers(self) -> list[JSONObject]:
        """Run every configured provider's health check now (a short timeout each):
        `[{kind, provider, ok, error}]`, the error redacted."""
        return await self.installed.check_providers()

    # The operator's cancel of a job, and a job's events oldest first (the console's job page)
    job_events = staticmethod(event_rows.for_job)

    async def cancel_job(self, job_id: str, reason: str | None) -> str:
        """Fail an unfinished job `cancelled`, refunded as a failed job; `cancelled`, `finished` or `not_found`."""
        return await cancel.cancel(self.parked, job_id, reason)

    # The operator pages and the marketplace's payouts (docs/console.md, "Operator pages").
    def operator_pages(self) -> list[OperatorPage]:
        """The operator pages the plugins registered (`register_operator_pages`), by title."""
        return sorted(self.pages.values(), key=lambda page: (page.title.lower(), page.name))

    latest_payouts = staticmethod(operator_reads.latest_payouts)
    payout_totals = staticmethod(operator_reads.payout_totals)

    async def deliver_inbound(self, message: InboundMessage) -> bool:
        """Offer an inbound message (`tollway.InboundMessage`) to the plugins' handlers; True when one took it."""
        return await self.inbound.deliver(message)

    def provider(self, kind: str) -> tuple[object, int]:
        """The client of the provider configured for `kind` and its cost estimate (micro-USDC
        per use); LookupError when none is configured."""
        return self.providers.client(kind, self.http)

    def settings(self, family: str) -> Mapping[str, str]:
        return self.settings_of(family)

    def transaction(self) -> AbstractAsyncContextManager[object]:
        """One database transaction (async context manager); statements inside share it."""
        return self.db.transaction()

    def webhook_target_problem(self, url: str) -> str | None:
        """Why `url` may not receive webhooks (https to a public address), or None."""
        return target_problem(url, allow_insecure=self.allow_insecure_webhooks)

    @staticmethod
    def new_webhook_secret() -> str:
        return new_secret()

    @staticmethod
    def sign_webhook(secret: str, raw_body: bytes, t: int) -> str:
        return sign(secret, raw_body, t)

    @staticmethod
    def verify_webhook(secret: str, raw_body: bytes, header: str) -> bool:
        return verify(secret, raw_body, header)

    async def enqueue_webhook(
        self,
        *,
        webhook_id: str,
        kind: str,
        subject: str,
        url: str,
        secret: str,
        body: Mapping[str, JSONValue],
        signing: str = "service",
    ) -> bool:
        """Add a signed webhook to the outbox in the caller's transaction (numbered: the body gets
        `attempt`); False when `webhook_id` exists. Call `webhooks_due` after the commit.
        `signing="acp"`: signed as ACP's order webhooks are (`Merchant-Signature`), body unchanged."""
        if signing not in SIGNINGS:
            raise ValueError(f"unknown webhook signing {signing!r}")
        acp = signing == "acp"
        return await outbox.enqueue(
            webhook_id=webhook_id,
            kind=kind,
            subject=subject,
            url=url,
            secret=secret,
            body=dict(body),
            numbered=not acp,
            signing="acp" if acp else None,
        )

    async def webhooks_due(self) -> None:
        await outbox.publish_due(self.events)

    @staticmethod
    async def webhook(webhook_id: str) -> JSONObject | None:
        """A webhook's delivery state (`id, kind, subject, state, attempts, next_attempt_ms,
        created_ms, updated_ms`), or None; never its URL, signing secret or body, which are
        the receiver's and the agent's (a plugin that needs them keeps its own copy)."""
        row = await outbox.get(webhook_id)
        return None if row is None else {key: row[key] for key in _WEBHOOK_STATE}

    @staticmethod
    async def webhook_attempts(webhook_id: str) -> list[JSONObject]:
        return await outbox.attempts_of(webhook_id)

    @staticmethod
    async def notify(agent_id: str, type_: str, title: str, body: str | None, metadata: Mapping[str, JSONValue]) -> str:
        return await notifications.notify(agent_id, type_, title, body, metadata)

    async def publish(self, channel: str, payload: str) -> None:
        """Wake listeners of `channel` in every process (after a commit)."""
        await self.events.publish(channel, payload)

    def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], None]:
        return self.events.subscribe(channel, callback)
