"""One attempt to POST a signed webhook body to its checked target, and what came of it.

The request goes to the address `targets.pin` checked, never to a fresh lookup
of the name: the URL's host is replaced by that address, the `Host` header keeps
the name, and for https the TLS handshake names it (SNI) and the certificate is
verified for it. Keep-alive is off, so a connection opened for one name is never
reused for another name served from the same address. Redirects are not
followed: a 3xx is a failed attempt. The response body is never read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
import time

import httpx

from tollway._core.webhooks.signing import ACP_SIGNATURE_HEADER, SIGNATURE_HEADER, acp_signature, sign
from tollway._core.webhooks.targets import Resolver, TargetRefused, pin, system_resolve

USER_AGENT = "Tollway-Webhooks/1"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one attempt came to: `delivered` on a 2xx; `final` when no later
    attempt could succeed (the URL itself is refused)."""

    delivered: bool
    status_code: int | None = None
    error: str | None = None
    final: bool = False
    duration_ms: int = 0


def make_client(
    *, timeout_s: float, transport: httpx.AsyncBaseTransport | None = None, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    """The webhook client: no redirects, no keep-alive, no proxy from the environment."""
    return httpx.AsyncClient(
        transport=transport,
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=False,
        trust_env=False,
        verify=verify,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def headers_for(
    *, webhook_id: str, secret: str, raw_body: bytes, t: int | None = None, signing: str | None = None
) -> dict[str, str]:
    if signing == "acp":  # an ACP order event (signing.py)
        sent = int(time.time()) if t is None else t
        return {
            "content-type": "application/json",
            ACP_SIGNATURE_HEADER: acp_signature(secret, raw_body),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sent)),
            "request-id": webhook_id,
            "user-agent": USER_AGENT,
        }
    return {
        "content-type": "application/json",
        SIGNATURE_HEADER: sign(secret, raw_body, int(time.time()) if t is None else t),
        "webhook-id": webhook_id,
        "user-agent": USER_AGENT,
    }


def _describe(status: int, location: str | None) -> str | None:
    if 200 <= status < 300:
        return None
    if 300 <= status < 400:
        return f"redirect not followed (HTTP {status}" + (f" to {location})" if location else ")")
    return f"HTTP {status}"


async def _post(
    client: httpx.AsyncClient,
    url: str,
    raw_body: bytes,
    headers: dict[str, str],
    resolve: Resolver,
    allow_insecure: bool,
) -> Outcome:
    try:
        target = await pin(url, allow_insecure=allow_insecure, resolve=resolve)
    except TargetRefused as refused:
        return Outcome(False, error=f"target refused: {refused.reason}", final=refused.permanent)
    sent_headers = dict(headers)
    if target.host_header is not None:
        sent_headers["host"] = target.host_header
    failure: Exception | None = None
    for address in target.addresses:
        try:
            async with client.stream(
                "POST", target.url_for(address), content=raw_body, headers=sent_headers, extensions=target.extensions()
            ) as response:
                error = _describe(response.status_code, response.headers.get("location"))
                return Outcome(error is None, status_code=response.status_code, error=error)
        except httpx.ConnectError as exc:  # try the name's next checked address
            failure = exc
        except httpx.TimeoutException:
            return Outcome(False, error="timed out")
        except httpx.HTTPError as exc:
            return Outcome(False, error=f"{type(exc).__name__}: {exc}"[:500])
    return Outcome(False, error=f"could not connect: {failure}"[:500])


async def attempt(
    client: httpx.AsyncClient,
    *,
    url: str,
    raw_body: bytes,
    headers: dict[str, str],
    allow_insecure: bool,
    timeout_s: float,
    resolve: Resolver = system_resolve,
) -> Outcome:
    """Check the target, POST `raw_body` with `headers`, all within `timeout_s`."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout_s):
            outcome = await _post(client, url, raw_body, headers, resolve, allow_insecure)
    except TimeoutError:
        outcome = Outcome(False, error="timed out")
    return dataclasses.replace(outcome, duration_ms=int((time.monotonic() - started) * 1000))
