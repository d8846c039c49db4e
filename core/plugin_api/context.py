"""`PluginContext`: what a plugin's hooks, tools, tasks and data sources may use (never the
kernel): the home folder, settings, HTTP client, the `Platform` of kernel services and the
plugin's per-service state; with `Platform`, the protocol of those kernel services."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import httpx

from tollway._core.basics.json_values import JSONObject, JSONValue

if TYPE_CHECKING:
    import msgspec

    from tollway._core.messages.inbound import InboundMessage

T = TypeVar("T")


class Transactions(Protocol):
    """The database as the kernel's services use it (runtime.database.Database is one)."""

    def transaction(self) -> AbstractAsyncContextManager[object]:
        """One database transaction (async context manager); statements inside share it."""
        ...


class ContentCheck(Protocol):
    """The operator's content rules (`ToolContext.check_content`): refuse blocked text."""

    def check(self, *texts: str | None) -> None: ...


class ToolDeclaration(Protocol):
    """What a caller of the service's tools reads of one (`tollway.Tool` is one)."""

    name: str
    input_type: type[msgspec.Struct]

    @property
    def short_description(self) -> str: ...

    @property
    def fixed_price(self) -> int | None: ...


class OperatorPageDeclaration(Protocol):
    """What the console reads of a registered operator page (`tollway.OperatorPage` is one):
    `load(platform, query, item)` answers a `tollway.Report`, or None for an unknown item."""

    name: str
    title: str
    load: Callable[[Platform, Mapping[str, str], str | None], Awaitable[object]]


class PreparedToolCall(Protocol):
    """A tool call validated and priced, not yet run."""

    price: int  # micro-USDC


class DelegatedTools(Protocol):
    """The service's tools, called for an agent and paid from money already charged (a goal's
    budget): validated and priced, run, then receipted as `covered` by the caller."""

    def callable_tools(self, *, leave_out: tuple[str, ...] = ()) -> list[ToolDeclaration]:
        """The tools a loop may call now (configured, none needing an Idempotency-Key or writing rows on acceptance)."""
        ...

    async def prepare(self, name: str, arguments: Mapping[str, JSONValue]) -> PreparedToolCall:
        """Validated and priced (400 naming every failing field, 404 for no such tool)."""
        ...

    async def run(self, call: PreparedToolCall, *, agent_id: str, request_id: str) -> object:
        """The tool's output (its failure raises, as in a paid call)."""
        ...

    async def receipt(
        self, call: PreparedToolCall, output: object, *, agent_id: str, request_id: str, goal_id: str
    ) -> JSONObject:
        """The call's signed receipt, in the caller's transaction."""
        ...

    def new_request_id(self) -> str:
        """A fresh request id for one delegated call."""
        ...


class Platform(Protocol):
    """The kernel services a plugin may use beside its tools' own work: transactions, parked
    jobs, sales and payouts, refunds, webhooks, notifications, events, providers, inbound
    messages and delegated tool calls. `PluginContext.platform` and `RouteCall.platform` are one."""

    @property
    def delegated(self) -> DelegatedTools:
        """The service's tools, called for an agent and paid from a goal's budget."""
        ...

    async def finish_job(self, job_id: str, result: JSONValue) -> bool:
        """Complete a parked job (its run answered `tollway.Parked`); False when it already has an outcome."""
        ...

    async def fail_job(self, job_id: str, code: str, message: str) -> bool:
        """Fail a parked job with a failure code (refunded as its tool says)."""
        ...

    async def pay_share(self, receipt_id: str, *, seller_agent_id: str, share: int) -> JSONObject | None:
        """Credit a seller `share` (micro-USDC) of a settled charge and issue the seller's receipt."""
        ...

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
        """A sale paid outside the service (a card charge through a `psp` provider): the buyer's
        settled receipt of `amount` (micro-USDC) and, when `credit` is given, that much credited
        to the buyer's credits; in the caller's transaction. `pay_share` of its receipt pays a seller."""
        ...

    async def refund_outside_sale(
        self, receipt_id: str, *, refund_id: str, amount: int, payment_reference: str, reason: str
    ) -> JSONObject:
        """The seller's side of a refund (`amount` micro-USDC) of an outside sale refunded outside:
        its credits and seller's share taken back in proportion, never below zero, and a `refund`
        receipt (`{receipt, credits_taken, share_taken}`); once per `refund_id`, never above the sale in all."""
        ...

    async def credit_outside_refund(
        self, receipt_id: str, *, refund_id: str, amount: int, limit: int, reason: str
    ) -> JSONObject | None:
        """The buyer's side of a seller's refund of a purchase paid by `receipt_id`: credited to its
        agent, never more than `limit` in all, with a `refund` receipt; once per `refund_id`."""
        ...

    async def agent_exists(self, agent_id: str) -> bool:
        """Whether `agent_id` names an agent of this service."""
        ...

    async def pay_out(self, agent_id: str, amount: int, to_address: str) -> JSONObject:
        """Withdraw `amount` (micro-USDC) of an agent's credits to a wallet, on-chain."""
        ...

    async def payouts_of(self, agent_id: str, *, limit: int = 50, offset: int = 0) -> list[JSONObject]:
        """An agent's payouts, newest first."""
        ...

    async def return_unspent(self, receipt_id: str, amount: int, *, reason: str) -> JSONObject | None:
        """Give back the unused part (micro-USDC) of a settled charge to its payer's credits, once per receipt."""
        ...

    def is_operator_token(self, given: str) -> bool:
        """Whether `given` is the operator token, compared in constant time (a page of the operator's signs in so)."""
        ...

    async def grant_credits(self, agent_id: str, amount: int, memo: str | None) -> JSONObject:
        """Grant `amount` (micro-USDC) of credits to an agent as the operator route does: `{agent_id, credits_balance, transaction_id}`."""
        ...

    async def pending_money(self) -> JSONObject:
        """Money in an intermediate state, with its age and why (the operator's pending report)."""
        ...

    async def revenue_per_day(self, since_ms: int) -> list[JSONObject]:
        """Revenue from the day of `since_ms` on, `{day, category, payment_method, total}` per day, category and payment method (micro-USDC)."""
        ...

    async def calls_per_minute(self, since_ms: int) -> list[JSONObject]:
        """Paid calls from `since_ms` on, `{minute, calls, errors}` per minute with calls."""
        ...

    async def tool_latency(self, since_ms: int) -> list[JSONObject]:
        """Each tool's calls from `since_ms` on with their run time: `{tool, calls, p50_ms, p99_ms}`."""
        ...

    async def credits_outstanding(self) -> str:
        """What every agent's credits add up to (USDC)."""
        ...

    async def receipts_page(
        self,
        *,
        agent_id: str | None,
        tool: str | None,
        category: str | None,
        since_ms: int | None,
        before: str | None,
        limit: int,
    ) -> JSONObject:
        """Every agent's receipts, newest first, filtered, by keyset: `{receipts, next}`."""
        ...

    async def receipt_revisions(self, receipt_id: str) -> list[JSONObject]:
        """Every signed revision of a receipt, oldest first, the current one last."""
        ...

    async def receipt_keys(self) -> list[JSONObject]:
        """The published receipt signing keys (`key_id`, `public_key` base64url, `active`, `created_at`)."""
        ...

    async def agents_by_credits(self, limit: int) -> list[JSONObject]:
        """The agents holding the most credits, most first."""
        ...

    async def agent_account(self, agent_ref: str, ledger_limit: int) -> JSONObject | None:
        """An agent (by id or wallet address) with its credits and latest ledger rows; None when unknown."""
        ...

    async def job_counts(self) -> list[JSONObject]:
        """How many jobs are in each state: `[{status, count}]`."""
        ...

    async def unfinished_jobs(self, limit: int) -> list[JSONObject]:
        """The oldest jobs not finished, oldest first, each saying whether it is stuck (its lease ran out)."""
        ...

    async def job_record(self, job_id: str) -> JSONObject | None:
        """One job's record, never its input or result; None when unknown."""
        ...

    async def webhook_counts(self) -> list[JSONObject]:
        """How many webhooks of the outbox are in each state: `[{state, count}]`."""
        ...

    async def webhooks_page(self, *, state: str | None, before: str | None, limit: int) -> JSONObject:
        """The outbox newest first, by keyset, each webhook with its last attempt (never its secret, body or URL path): `{webhooks, next}`."""
        ...

    async def webhook_entry(self, webhook_id: str) -> JSONObject | None:
        """One webhook of the outbox with every attempt (never its secret, body or URL path); None when unknown."""
        ...

    async def redeliver_webhook(self, webhook_id: str) -> JSONObject | None:
        """Queue a given-up webhook again with a fresh budget of attempts: `{queued, state, reason}`; None when unknown."""
        ...

    async def watch_counts(self) -> list[JSONObject]:
        """How many watches are running, paused (per reason) and deleted: `[{state, reason, count}]`."""
        ...

    async def watch_delivery_counts(self) -> list[JSONObject]:
        """How many watch deliveries are in each state: `[{state, count}]`."""
        ...

    async def latest_watch_deliveries(self, limit: int) -> list[JSONObject]:
        """The latest watch deliveries, newest first."""
        ...

    async def access_tokens(self, agent_ref: str, limit: int) -> JSONObject | None:
        """`{tokens, revocation_bound_s}`: an agent's latest access tokens by public id (never the token or its hash); None when unknown."""
        ...

    async def revoke_access_token(self, agent_id: str, token_id: str) -> str | None:
        """Revoke an agent's access token by its id (twice is harmless): when, or None when it has no such token."""
        ...

    def installed_plugins(self) -> JSONObject:
        """`{plugins, failures}`: each plugin's distribution, version, tools and routes count; load failures, redacted."""
        ...

    def provider_status(self) -> list[JSONObject]:
        """Each provider kind: the chosen provider, configured or not, the missing settings' names."""
        ...

    async def check_providers(self) -> list[JSONObject]:
        """Every configured provider's health check run now: `[{kind, provider, ok, error}]`, errors redacted."""
        ...

    async def job_events(self, job_id: str) -> list[JSONObject]:
        """A job's events, oldest first: `{seq, at, kind, attempt, text}` (docs/jobs.md, "Events")."""
        ...

    async def cancel_job(self, job_id: str, reason: str | None) -> str:
        """The operator cancels a job: an unfinished one fails `cancelled` and is refunded as a
        failed job; `cancelled`, or `finished` (it already had an outcome: nothing changes), or `not_found`."""
        ...

    # The operator pages and the marketplace's payouts (docs/console.md, "Operator pages").
    def operator_pages(self) -> list[OperatorPageDeclaration]:
        """The operator pages the plugins registered (`register_operator_pages`), by title."""
        ...

    async def latest_payouts(self, limit: int) -> list[JSONObject]:
        """Every agent's latest payouts, newest first, never the signed payment they carry."""
        ...

    async def payout_totals(self) -> list[JSONObject]:
        """Payouts counted and added up by state: `[{status, count, amount_usdc}]`."""
        ...

    async def deliver_inbound(self, message: InboundMessage) -> bool:
        """Offer an inbound message to the plugins' handlers; True when one took it."""
        ...

    def provider(self, kind: str) -> tuple[object, int]:
        """The client of the provider configured for `kind` and its cost estimate (micro-USDC per use)."""
        ...

    def settings(self, family: str) -> Mapping[str, str]:
        """A family's settings by name, defaults included."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[object]:
        """One database transaction (async context manager); statements inside share it."""
        ...

    def webhook_target_problem(self, url: str) -> str | None:
        """Why `url` may not receive webhooks (https to a public address), or None."""
        ...

    def new_webhook_secret(self) -> str:
        """A fresh webhook signing secret."""
        ...

    def sign_webhook(self, secret: str, raw_body: bytes, t: int) -> str:
        """The signature header of a webhook body sent at `t` (seconds)."""
        ...

    def verify_webhook(self, secret: str, raw_body: bytes, header: str) -> bool:
        """Whether a signature header matches the body."""
        ...

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
        """Add a signed webhook to the outbox in the caller's transaction; False when `webhook_id`
        exists. `signing="acp"` signs it as an ACP order event (`Merchant-Signature`), body unchanged."""
        ...

    async def webhooks_due(self) -> None:
        """Wake the webhook sender (after the commit of `enqueue_webhook`)."""
        ...

    async def webhook(self, webhook_id: str) -> JSONObject | None:
        """A webhook's delivery state (`id, kind, subject, state, attempts, next_attempt_ms, created_ms, updated_ms`), or None; never its URL, secret or body."""
        ...

    async def webhook_attempts(self, webhook_id: str) -> list[JSONObject]:
        """The delivery attempts of one webhook, oldest first."""
        ...

    async def notify(
        self, agent_id: str, type_: str, title: str, body: str | None, metadata: Mapping[str, JSONValue]
    ) -> str:
        """Notify an agent (its notifications feed); the notification's id."""
        ...

    async def publish(self, channel: str, payload: str) -> None:
        """Wake listeners of `channel` in every process (after a commit)."""
        ...

    def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback(payload)` on each event of `channel`; returns the unsubscribe function."""
        ...


@dataclasses.dataclass(frozen=True)
class StateKey(Generic[T]):
    """The name of one value a plugin keeps per service, e.g.
    `RUNNER: StateKey[SessionRunner] = StateKey("goals", "runner")` (a module constant)."""

    family: str
    name: str


class PluginState:
    """Per-service values of the plugins (background servers, runners, timestamps), by `StateKey`:
    a new service starts with none, so nothing leaks between services in one process."""

    def __init__(self) -> None:
        self._values: dict[StateKey[object], object] = {}

    def get(self, key: StateKey[T]) -> T | None:
        return self._values.get(key)  # type: ignore[return-value]

    def set(self, key: StateKey[T], value: T) -> None:
        self._values[key] = value  # type: ignore[index]

    def setdefault(self, key: StateKey[T], make: Callable[[], T]) -> T:
        """The value under `key`, made (and kept) by `make()` when there is none."""
        if key not in self._values:
            self._values[key] = make()  # type: ignore[index]
        return self._values[key]  # type: ignore[index, return-value]

    def pop(self, key: StateKey[T]) -> T | None:
        return self._values.pop(key, None)  # type: ignore[call-overload, no-any-return]


class PluginContext:
    """Handed to every hook that takes `context` (`register_tools`, `startup`, `shutdown`),
    `PeriodicTask.run`, `DataSource.refresh`/`health`, `WatchSource.poll`, and to tools as
    `ToolContext.plugin`. One per running service, from its start to its stop.

    `home` is `TOLLWAY_HOME` (a plugin keeps its files in a folder of its own under it);
    `offline` is `TOLLWAY_OFFLINE` (no background downloads); `http` is the service's shared
    HTTP client; `settings(family)` maps a family's setting names to their values;
    `platform` the kernel services (`tollway.Platform`); `state` the plugins' per-service values.
    `http` and `platform` exist once the service has started (RuntimeError before).
    """

    def __init__(
        self,
        *,
        home: Path,
        offline: bool,
        settings_of: Callable[[str], Mapping[str, str]],
        http: httpx.AsyncClient | None = None,
        platform: Platform | None = None,
    ) -> None:
        self.home = home
        self.offline = offline
        self.settings_of = settings_of
        self.state = PluginState()
        self._http = http
        self._platform = platform

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            raise RuntimeError("the service's HTTP client exists once the service has started")
        return self._http

    @property
    def platform(self) -> Platform:
        if self._platform is None:
            raise RuntimeError("the kernel's platform exists once the service has started")
        return self._platform

    @property
    def started(self) -> bool:
        return self._platform is not None

    def settings(self, family: str) -> Mapping[str, str]:
        """The family's settings by name (`TOLLWAY_SANCTIONS_LISTS_URL` -> `lists_url`), defaults included."""
        return self.settings_of(family)

    def bind(self, *, http: httpx.AsyncClient, platform: Platform) -> None:
        """The kernel's part, at start: the started service's HTTP client and platform."""
        self._http, self._platform = http, platform
