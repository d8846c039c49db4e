"""The clients: `AsyncClient` (asyncio, httpx) and `Client` (the same, blocking).

A call sends the input; a 402 is paid by signing the x402 requirement it carries (within the
spend caps) and sending the same bytes again with the payment and `X-Quote-ID`; an identity
that holds credits pays from them with no 402 round trip. A job's 202 is waited for by the
WebSocket and by polling at once.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import uuid
from collections.abc import Coroutine
from decimal import Decimal
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
from eth_account import Account

from ._errors import (
    InvalidRequest,
    PaymentRequired,
    SpendCapExceeded,
    TollwayError,
    TransportError,
    error_from_answer,
    error_from_job,
)
from ._receipts import check_receipt
from ._results import JobAccepted, JobResult, Payment, ToolResult
from ._signing import agent_proof, chain_id, decode_payment_required, sign_payment
from ._spec import ToolSpec
from ._tools import TOOLS, AsyncTools, Tools
from ._wait import wait_two_channels

T = TypeVar("T")
MICRO = Decimal(1_000_000)
PAY_WITH = ("auto", "credits", "x402")
DEFAULT_URL = "http://127.0.0.1:8402"


def _usdc(value: str | int | float | Decimal | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


class AsyncClient(AsyncTools):
    """A Tollway client. Identify with `wallet_key` (a private key: pays by x402 and spends the
    wallet's credits with a signed agent proof) or `token` (an access token: pays from credits).

    `max_payment_usdc` caps what one call may pay by x402 (default 1.00 USDC) and
    `max_spend_usdc` what this client may pay in all (default: no cap); a quote above either is
    refused with `SpendCapExceeded` before anything is signed. `pay_with`: "auto" (credits when
    they cover the price, else x402), "credits" (never sign a payment) or "x402" (always).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        wallet_key: str | None = None,
        token: str | None = None,
        max_payment_usdc: str | Decimal | None = "1.00",
        max_spend_usdc: str | Decimal | None = None,
        pay_with: str = "auto",
        wait_timeout_s: float = 420.0,
        request_timeout_s: float = 60.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if pay_with not in PAY_WITH:
            raise ValueError(f"pay_with must be one of {PAY_WITH}, not {pay_with!r}")
        self.base_url = base_url.rstrip("/")
        self.account = Account.from_key(wallet_key) if wallet_key else None
        self.token = token
        self.max_payment_usdc = _usdc(max_payment_usdc)
        self.max_spend_usdc = _usdc(max_spend_usdc)
        self.pay_with = pay_with
        self.wait_timeout_s = wait_timeout_s
        self.spent_usdc = Decimal(0)  # what this client has paid by x402
        self._http = http or httpx.AsyncClient(timeout=request_timeout_s)
        self._owns_http = http is None
        self._chain_id: int | None = None
        self._keys: dict[str, Any] | None = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    # -- identity ------------------------------------------------------------------------

    async def _network_chain_id(self) -> int:
        if self._chain_id is None:
            health = await self._request("GET", "/healthz")
            self._chain_id = chain_id(health.json()["network"])
        return self._chain_id

    async def _identity(self, method: str, path: str, body: bytes, scope: str) -> dict[str, str]:
        """Who is asking: the access token, else the wallet with a proof of this one request."""
        if self.token:
            return {"Authorization": f"Bearer {self.token}"}
        if self.account is None:
            return {}
        proof = agent_proof(
            self.account, chain=await self._network_chain_id(), scope=scope, method=method, path=path, body=body
        )
        return {"X-Agent-ID": self.account.address, "X-Agent-Proof": proof}

    # -- HTTP ----------------------------------------------------------------------------

    async def _request(
        self, method: str, path: str, *, content: bytes | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        try:
            return await self._http.request(method, self.base_url + path, content=content, headers=headers)
        except httpx.HTTPError as exc:
            raise TransportError("unreachable", f"{method} {self.base_url}{path}: {exc}")

    async def _send(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        """One request, retried while the service says the same idempotency key is in progress."""
        for _ in range(30):
            response = await self._request(method, path, content=body, headers=headers)
            if response.status_code != 409 or _json(response).get("error") != "idempotency_in_progress":
                return response
            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
        return response

    async def _get(self, path: str) -> Any:
        response = await self._request("GET", path, headers=await self._identity("GET", path, b"", "read"))
        if response.status_code != 200:
            raise error_from_answer(response.status_code, _json(response))
        return response.json()

    # -- tools ---------------------------------------------------------------------------

    def _cap(self, amount: Decimal, limit: Decimal | None) -> None:
        if self.max_payment_usdc is not None and amount > self.max_payment_usdc:
            raise SpendCapExceeded(
                "spend_cap_exceeded", f"the quote of {amount} USDC is above the cap of {self.max_payment_usdc} a call"
            )
        if limit is not None and amount > limit:
            raise SpendCapExceeded("spend_cap_exceeded", f"the quote of {amount} USDC is above this call's cap {limit}")
        if self.max_spend_usdc is not None and self.spent_usdc + amount > self.max_spend_usdc:
            raise SpendCapExceeded(
                "spend_cap_exceeded",
                f"paying {amount} USDC would take this client past its cap of {self.max_spend_usdc} "
                f"({self.spent_usdc} spent)",
            )

    async def call(
        self,
        tool: str | ToolSpec,
        input: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        wait: bool = True,
        timeout_s: float | None = None,
        pay_with: str | None = None,
        max_payment_usdc: str | Decimal | None = None,
    ) -> ToolResult[Any] | JobResult | JobAccepted:
        """Call a tool by name (or spec), paying as the client is set up to; a job is waited for
        (`wait=False`: its acceptance is returned). Refusals raise `TollwayError`s."""
        spec = TOOLS[tool] if isinstance(tool, str) else tool
        pay = pay_with or self.pay_with
        if pay not in PAY_WITH:
            raise ValueError(f"pay_with must be one of {PAY_WITH}, not {pay!r}")
        body = json.dumps(input, separators=(",", ":"), ensure_ascii=False).encode()
        path = spec.url_path(input)
        base = {"Content-Type": "application/json"}
        if spec.idempotency != "ignored":
            # Every call of a tool that honours a key sends one, so a retry is answered, not run, again.
            base["Idempotency-Key"] = idempotency_key or f"tw-{uuid.uuid4()}"
        elif idempotency_key is not None:
            raise InvalidRequest("invalid_request", f"{spec.name} does not honour an Idempotency-Key")
        headers = dict(base)
        if pay == "x402":
            headers["X-Payment-Method"] = "x402"
        else:
            headers.update(await self._identity(spec.method, path, body, "write"))
        response = await self._send(spec.method, path, body, headers)
        payment = Payment("credits")
        if response.status_code == 402 and _json(response).get("error") == "payment_required":
            quote_body = _json(response)
            if pay == "credits" or self.account is None:
                raise error_from_answer(402, quote_body)
            requirement = decode_payment_required(response.headers["PAYMENT-REQUIRED"])["accepts"][0]
            amount = Decimal(int(requirement["amount"])) / MICRO
            self._cap(amount, _usdc(max_payment_usdc))
            paid = {**base, spec.payment_header: sign_payment(self.account, requirement)}
            paid["X-Quote-ID"] = quote_body.get("quote_id") or requirement.get("extra", {}).get("quoteId", "")
            response = await self._send(spec.method, path, body, paid)
            if response.status_code in (200, 202):
                self.spent_usdc += amount
            settlement = response.headers.get("PAYMENT-RESPONSE")
            payment = Payment("x402", amount, json.loads(base64.b64decode(settlement)) if settlement else None)
        answer = _json(response)
        if response.status_code == 200 and spec.mode == "inline":
            return ToolResult(answer.get("data", answer), payment)
        if response.status_code == 202:
            accepted = JobAccepted(
                request_id=answer["request_id"],
                tool=answer.get("tool", spec.name),
                status=answer.get("status", "pending"),
                receipt_id=answer.get("receipt_id"),
                message=answer.get("message"),
                payment=payment,
                body=answer,
            )
            if not wait:
                return accepted
            done = await self.wait(accepted.request_id, timeout_s=timeout_s)
            done.payment = payment
            return done
        raise error_from_answer(response.status_code, answer)

    async def _call_tool(self, spec: ToolSpec, input: Any, **options: Any) -> Any:
        return await self.call(spec, input, **options)

    # -- jobs ----------------------------------------------------------------------------

    async def job(self, request_id: str) -> dict[str, Any]:
        """The Job resource now (`GET /v1/requests/{id}`)."""
        return await self._get(f"/v1/requests/{quote(request_id, safe='')}")

    def _websocket_url(self, request_id: str) -> str:
        parts = urlsplit(self.base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        path = parts.path + "/v1/requests/subscribe"
        return urlunsplit((scheme, parts.netloc, path, f"request_ids={quote(request_id, safe='')}", ""))

    async def wait(self, request_id: str, *, timeout_s: float | None = None) -> JobResult:
        """Wait for a job by WebSocket and polling at once (`wait_timeout_s`, 420 s, by default);
        its result, or `JobFailed` with its `error_code`, or `WaitTimeout`."""
        subscribe = urlsplit(self._websocket_url(request_id)).path
        job, channel = await wait_two_channels(
            request_id=request_id,
            websocket_url=self._websocket_url(request_id),
            websocket_headers=await self._identity("GET", subscribe, b"", "read"),
            get_job=lambda: self.job(request_id),
            timeout_s=self.wait_timeout_s if timeout_s is None else timeout_s,
        )
        if job.get("status") == "failed":
            raise error_from_job(job)
        return JobResult(request_id, job.get("receipt_id"), job.get("result"), job, channel)

    # -- money and receipts --------------------------------------------------------------

    async def balance(self) -> dict[str, Any]:
        """`GET /v1/balance`: the caller's credits."""
        return await self._get("/v1/balance")

    async def top_up(self, amount: str | Decimal) -> dict[str, Any]:
        """Buy `amount` USDC of credits by x402 (`POST /v1/credits/top-up`; a wallet only),
        within the spend caps; the top-up record (`status` credited or pending)."""
        if self.account is None:
            raise PaymentRequired("payment_required", "a top-up is paid by a wallet: give the client wallet_key")
        path = "/v1/credits/top-up"
        body = json.dumps({"amount": str(amount)}).encode()
        headers = {"Content-Type": "application/json"}
        quoted = await self._send("POST", path, body, headers)
        if quoted.status_code != 402:
            raise error_from_answer(quoted.status_code, _json(quoted))
        requirement = decode_payment_required(quoted.headers["PAYMENT-REQUIRED"])["accepts"][0]
        value = Decimal(int(requirement["amount"])) / MICRO
        self._cap(value, None)
        headers.update({"payment-signature": sign_payment(self.account, requirement)})
        headers["X-Quote-ID"] = _json(quoted).get("quote_id", "")
        response = await self._send("POST", path, body, headers)
        if response.status_code not in (200, 202):
            raise error_from_answer(response.status_code, _json(response))
        self.spent_usdc += value
        return response.json()

    async def receipt(self, receipt_id: str) -> dict[str, Any]:
        """One of the caller's receipts as served (`GET /v1/receipts/{id}`)."""
        return await self._get(f"/v1/receipts/{quote(receipt_id, safe='')}")

    async def receipt_keys(self, *, refresh: bool = False) -> dict[str, Any]:
        """The service's published receipt keys (`GET /v1/receipts/keys`), kept after the first ask."""
        if self._keys is None or refresh:
            response = await self._request("GET", "/v1/receipts/keys")
            if response.status_code != 200:
                raise error_from_answer(response.status_code, _json(response))
            self._keys = response.json()
        return self._keys

    async def verify_receipt(self, receipt: dict[str, Any] | str) -> dict[str, Any]:
        """The receipt (fetched when given by id), checked with the published keys; raises
        `ReceiptInvalid` when it does not verify. `verify_receipt(receipt, keys)` does the
        same with no network at all."""
        if isinstance(receipt, str):
            receipt = await self.receipt(receipt)
        keys = await self.receipt_keys()
        if str(receipt.get("key_id")) not in {k["key_id"] for k in keys.get("keys", [])}:
            keys = await self.receipt_keys(refresh=True)  # a key the service rotated to since
        check_receipt(receipt, keys)
        return receipt


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


class Client(Tools):
    """The blocking client: `AsyncClient`'s methods, run on a private event loop thread."""

    def __init__(self, base_url: str = DEFAULT_URL, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tollway-client", daemon=True)
        self._thread.start()
        self._async = AsyncClient(base_url, **options)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._loop.is_running():
            self._run(self._async.aclose())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    @property
    def spent_usdc(self) -> Decimal:
        return self._async.spent_usdc

    @property
    def account(self) -> Any:
        return self._async.account

    def _run_tool(self, spec: ToolSpec, input: Any, **options: Any) -> Any:
        return self._run(self._async.call(spec, input, **options))

    def call(self, tool: str | ToolSpec, input: dict[str, Any], **options: Any) -> Any:
        """As `AsyncClient.call`."""
        return self._run(self._async.call(tool, input, **options))

    def job(self, request_id: str) -> dict[str, Any]:
        return self._run(self._async.job(request_id))

    def wait(self, request_id: str, *, timeout_s: float | None = None) -> JobResult:
        return self._run(self._async.wait(request_id, timeout_s=timeout_s))

    def balance(self) -> dict[str, Any]:
        return self._run(self._async.balance())

    def top_up(self, amount: str | Decimal) -> dict[str, Any]:
        return self._run(self._async.top_up(amount))

    def receipt(self, receipt_id: str) -> dict[str, Any]:
        return self._run(self._async.receipt(receipt_id))

    def receipt_keys(self, *, refresh: bool = False) -> dict[str, Any]:
        return self._run(self._async.receipt_keys(refresh=refresh))

    def verify_receipt(self, receipt: dict[str, Any] | str) -> dict[str, Any]:
        return self._run(self._async.verify_receipt(receipt))


__all__ = ["AsyncClient", "Client", "TollwayError"]
