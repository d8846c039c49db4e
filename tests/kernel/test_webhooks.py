"""The webhook outbox on SQLite and PostgreSQL, sending to a real local receiver:
signatures, `webhook-id`, numbered attempts, retries with growing delay,
abandonment, redirects, target rules (SSRF), pinned addresses with TLS, concurrent
senders, a sender killed mid-send, and the loop run beside the workers."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import hmac
import ipaddress
import json
import re
import ssl
import time
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.webhook_receiver import receiving
from tollway._core.basics.ids import new_id
from tollway._core.webhooks import outbox, signing
from tollway._core.webhooks.outbox import WebhookSender, enqueue, publish_due
from tollway._core.webhooks.targets import address_problem, target_problem
from tollway._runtime.service import Background

SECRET = "whsec_test-secret"
FAST = {"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1", "TOLLWAY_WEBHOOK_RETRY_BASE_S": "0.05"}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(env=FAST)


async def put(kernel, url: str, *, numbered: bool = False, body: dict | None = None, kind: str = "watch.change") -> str:
    webhook_id = new_id("dlv")
    async with kernel.db.transaction():
        assert await enqueue(
            webhook_id=webhook_id,
            kind=kind,
            subject="w_1",
            url=url,
            secret=SECRET,
            body=body if body is not None else {"type": kind, "delivery_id": webhook_id},
            numbered=numbered,
        )
    await publish_due(kernel.events, webhook_id)
    return webhook_id


async def first_request(receiver, task) -> None:
    for _ in range(500):
        if receiver.requests or task.done():
            break
        await asyncio.sleep(0.01)
    assert len(receiver.requests) == 1


async def settle(sender: WebhookSender, webhook_id: str, *, timeout_s: float = 15.0) -> dict:
    """Run the sender until the webhook is no longer pending."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        await sender.run_due()
        row = await outbox.get(webhook_id)
        if row["state"] != "pending":
            return row
        await asyncio.sleep(0.01)
    raise AssertionError(f"webhook {webhook_id} still pending")


def assert_signed(request, *, now: float | None = None) -> None:
    assert request.headers["content-type"] == "application/json"
    assert signing.verify(SECRET, request.body, request.headers["x-service-signature"], now=now)
    assert not signing.verify("whsec_other", request.body, request.headers["x-service-signature"], now=now)


# -- signing ---------------------------------------------------------------------


def test_signature_is_hmac_sha256_of_time_dot_body() -> None:
    body = b'{"type":"watch.change","delivery_id":"dlv_1"}'
    expected = hmac.new(b"whsec_abc", b"1767225600." + body, hashlib.sha256).hexdigest()
    header = signing.sign("whsec_abc", body, 1767225600)
    assert header == f"t=1767225600,v1={expected}"
    assert signing.verify("whsec_abc", body, header, now=1767225600 + 299)
    assert signing.verify("whsec_abc", body, header, now=1767225600 - 299)


def test_verify_refuses_stale_tampered_or_malformed() -> None:
    body = b'{"a":1}'
    header = signing.sign("whsec_abc", body, 1_000_000)
    assert not signing.verify("whsec_abc", body, header, now=1_000_000 + 301)
    assert signing.verify("whsec_abc", body, header, now=1_000_000 + 301, tolerance_s=400)
    assert not signing.verify("whsec_abc", b'{"a":2}', header, now=1_000_000)
    assert not signing.verify("whsec_abc", body, header.replace("t=1000000", "t=1000001"), now=1_000_000)
    assert not signing.verify("whsec_abc", body, "v1=" + header.split("v1=")[1], now=1_000_000)
    assert not signing.verify("whsec_abc", body, "t=abc,v1=00", now=1_000_000)
    assert not signing.verify("whsec_abc", body, "", now=1_000_000)


def test_new_secrets_are_prefixed_and_unique() -> None:
    a, b = signing.new_secret(), signing.new_secret()
    assert a.startswith("whsec_") and len(a) >= 6 + 43 and a != b


def test_the_receiver_snippet_in_the_docs_verifies() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len(snippet.strip().splitlines()) <= 10
    namespace: dict = {}
    exec(snippet, namespace)
    verified = namespace["verified"]
    body, now = b'{"type":"watch.change"}', int(time.time())
    assert verified("whsec_abc", body, signing.sign("whsec_abc", body, now))
    assert not verified("whsec_abc", body + b" ", signing.sign("whsec_abc", body, now))
    assert not verified("whsec_abc", body, signing.sign("whsec_abc", body, now - 301))
    assert not verified("whsec_xyz", body, signing.sign("whsec_abc", body, now))


# -- target rules ----------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hook",
        "https://127.0.0.1/hook",
        "https://10.1.2.3/hook",
        "https://[::1]/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://localhost:8443/hook",
        "https://user:pw@example.com/hook",
        "https:///hook",
        "ftp://example.com/",
        "https://[::ffff:10.0.0.1]/",
        "https://100.64.0.1/",
        "https://224.0.0.1/",
        "https://0.0.0.0/",
        "https://192.168.1.1/",
        "https://[fc00::1]/",
        "https://[fe80::1]/",
    ],
)
def test_target_problem_refuses(url: str) -> None:
    assert target_problem(url, allow_insecure=False) is not None


@pytest.mark.parametrize(
    "url", ["https://example.com/hook", "https://93.184.215.14:8443/x?y=1", "https://[2606:4700::1111]/"]
)
def test_target_problem_accepts_public_https(url: str) -> None:
    assert target_problem(url, allow_insecure=False) is None


def test_insecure_setting_allows_http_and_loopback_but_not_link_local() -> None:
    assert target_problem("http://127.0.0.1:8080/hook", allow_insecure=True) is None
    assert target_problem("http://localhost:8080/hook", allow_insecure=True) is None
    assert target_problem("https://[::1]/hook", allow_insecure=True) is None
    assert target_problem("http://10.0.0.5/hook", allow_insecure=True) is None
    assert target_problem("http://169.254.169.254/", allow_insecure=True) is not None
    assert address_problem(ipaddress.ip_address("ff02::1"), allow_insecure=True) is not None
    assert target_problem("ftp://127.0.0.1/", allow_insecure=True) is not None


# -- delivery --------------------------------------------------------------------


async def test_delivery_is_signed_and_carries_webhook_id(kernel) -> None:
    async with receiving([204]) as receiver:
        webhook_id = await put(kernel, receiver.url, body={"type": "watch.change", "n": 1, "nested": {"ü": [1, 2]}})
        assert (await outbox.get(webhook_id))["state"] == "pending"
        row = await settle(kernel.webhooks, webhook_id)
    assert row["state"] == "delivered" and row["attempts"] == 1
    [request] = receiver.requests
    assert request.method == "POST" and request.path == "/hook"
    assert request.headers["webhook-id"] == webhook_id
    assert_signed(request)
    assert json.loads(request.body) == {"type": "watch.change", "n": 1, "nested": {"ü": [1, 2]}}
    [attempt] = await kernel.webhooks.attempts_of(webhook_id)
    assert attempt["attempt"] == 1 and attempt["status_code"] == 204 and attempt["error"] is None
    assert attempt["duration_ms"] >= 0
    assert await kernel.webhooks.run_due() == 0  # nothing sent twice


async def test_enqueue_belongs_to_the_callers_transaction(kernel) -> None:
    webhook_id = new_id("dlv")
    with pytest.raises(RuntimeError):
        async with kernel.db.transaction():
            await enqueue(
                webhook_id=webhook_id,
                kind="watch.change",
                subject="w",
                url="https://example.com/",
                secret=SECRET,
                body={},
            )
            raise RuntimeError("the charge failed")
    assert await outbox.get(webhook_id) is None
    async with kernel.db.transaction():
        assert await enqueue(
            webhook_id=webhook_id, kind="watch.change", subject="w", url="https://example.com/", secret=SECRET, body={}
        )
    assert not await enqueue(
        webhook_id=webhook_id, kind="watch.change", subject="w", url="https://example.com/", secret=SECRET, body={}
    )
    assert (await outbox.get(webhook_id))["numbered"] is False


async def test_failures_are_retried_with_growing_delay_and_numbered(kernel) -> None:
    async with receiving([500, 500, 200]) as receiver:
        webhook_id = await put(
            kernel, receiver.url, numbered=True, kind="case.result", body={"event": "case.result", "goal_id": "g"}
        )
        row = await settle(kernel.webhooks, webhook_id)
    assert row["state"] == "delivered" and row["attempts"] == 3
    assert [json.loads(r.body)["attempt"] for r in receiver.requests] == [1, 2, 3]
    for request in receiver.requests:
        assert_signed(request)
        assert json.loads(request.body)["goal_id"] == "g"
    attempts = await outbox.attempts_of(webhook_id)
    assert [(a["attempt"], a["status_code"]) for a in attempts] == [(1, 500), (2, 500), (3, 200)]
    assert attempts[0]["error"] == "HTTP 500" and attempts[2]["error"] is None
    gaps = [b.at - a.at for a, b in zip(receiver.requests, receiver.requests[1:])]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1  # 1 x base, then 2 x base
    assert json.loads(row["body"]) == {"event": "case.result", "goal_id": "g"}  # stored without attempt


async def test_six_failed_attempts_abandon_it(kernel) -> None:
    async with receiving([503]) as receiver:
        webhook_id = await put(kernel, receiver.url)
        row = await settle(kernel.webhooks, webhook_id)
        await asyncio.sleep(0.1)
        assert await kernel.webhooks.run_due() == 0
    assert row["state"] == "abandoned" and row["attempts"] == 6
    assert len(receiver.requests) == 6 and set(receiver.ids()) == {webhook_id}
    attempts = await outbox.attempts_of(webhook_id)
    assert [a["attempt"] for a in attempts] == [1, 2, 3, 4, 5, 6]
    assert {a["status_code"] for a in attempts} == {503}
    gaps = [b.at - a.at for a, b in zip(receiver.requests, receiver.requests[1:])]
    assert all(gap >= 0.05 * 2**i for i, gap in enumerate(gaps)), gaps


async def test_redirects_are_not_followed(kernel) -> None:
    async with receiving([200]) as elsewhere, receiving([302], location=None) as redirecting:
        redirecting.location = elsewhere.url
        webhook_id = await put(kernel, redirecting.url)
        assert await kernel.webhooks.run_due() == 1
    [attempt] = await outbox.attempts_of(webhook_id)
    assert attempt["status_code"] == 302 and "redirect not followed" in attempt["error"]
    assert elsewhere.connections == 0 and len(redirecting.requests) == 1
    row = await outbox.get(webhook_id)
    assert row["state"] == "pending" and row["attempts"] == 1


# -- SSRF ------------------------------------------------------------------------


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests to a real transport, remembering each one."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await self.inner.handle_async_request(request)


async def test_internal_targets_are_refused_without_connecting(kernel) -> None:
    transport = RecordingTransport()
    secure = WebhookSender(
        db=kernel.db, events=kernel.events, retry_base_s=0.05, allow_insecure=False, transport=transport
    )
    try:
        async with receiving([200]) as receiver:
            port = receiver.port
            refused_outright = [
                f"http://127.0.0.1:{port}/hook",
                f"https://127.0.0.1:{port}/hook",
                "https://10.1.2.3/hook",
                f"https://[::1]:{port}/hook",
                "https://169.254.169.254/latest/meta-data",
                f"https://localhost:{port}/hook",
            ]
            outright = [await put(kernel, url) for url in refused_outright]
            resolved = await put(kernel, f"https://127.1:{port}/hook")  # a name the resolver turns into 127.0.0.1
            assert await secure.run_due() == len(outright) + 1
        assert receiver.connections == 0 and transport.requests == []
        for webhook_id in outright:
            row = await outbox.get(webhook_id)
            [attempt] = await outbox.attempts_of(webhook_id)
            assert row["state"] == "abandoned", row["url"]  # the URL can never pass: no retries
            assert attempt["status_code"] is None and attempt["error"].startswith("target refused: ")
        row = await outbox.get(resolved)
        [attempt] = await outbox.attempts_of(resolved)
        assert row["state"] == "pending" and row["attempts"] == 1  # what a name resolves to may change: retried
        assert attempt["error"] == "target refused: 127.1 resolves to 127.0.0.1: 127.0.0.1 is not a public address"
    finally:
        await secure.aclose()


async def test_every_resolved_address_must_be_public(kernel) -> None:
    answers = {"mixed.example.test": ["93.184.215.14", "10.0.0.7"], "mapped.example.test": ["::ffff:192.168.0.1"]}

    async def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    transport = RecordingTransport()
    secure = WebhookSender(
        db=kernel.db, events=kernel.events, allow_insecure=False, transport=transport, resolve=resolve
    )
    try:
        mixed = await put(kernel, "https://mixed.example.test/hook")
        mapped = await put(kernel, "https://mapped.example.test/hook")
        assert await secure.run_due() == 2
    finally:
        await secure.aclose()
    assert transport.requests == []
    assert "10.0.0.7 is not a public address" in (await outbox.attempts_of(mixed))[0]["error"]
    assert "::ffff:192.168.0.1" in (await outbox.attempts_of(mapped))[0]["error"]


def _certificate(name: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


async def test_sends_to_the_checked_address_with_the_name_for_tls(kernel, tmp_path) -> None:
    name = "hooks.example.test"  # resolvable only through the test's resolver
    cert_pem, key_pem = _certificate(name)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(key_pem)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    client_ctx = ssl.create_default_context(cadata=cert_pem.decode())
    lookups: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["::1", "127.0.0.1"]  # nothing listens on ::1: the next checked address is tried

    sender = WebhookSender(db=kernel.db, events=kernel.events, allow_insecure=True, verify=client_ctx, resolve=resolve)
    try:
        async with receiving([200], ssl_context=server_ctx) as receiver:
            webhook_id = await put(kernel, f"https://{name}:{receiver.port}/hook")
            row = await settle(sender, webhook_id)
    finally:
        await sender.aclose()
    assert row["state"] == "delivered"
    assert lookups == [name]  # resolved once, and the request went to what was checked
    assert receiver.server_names[-1] == name
    [request] = receiver.requests
    assert request.headers["host"] == f"{name}:{receiver.port}" and request.headers["webhook-id"] == webhook_id
    assert_signed(request)


# -- concurrency, crashes, the loop ----------------------------------------------


async def test_two_senders_send_each_webhook_once(kernel) -> None:
    other = WebhookSender(db=kernel.db, events=kernel.events, retry_base_s=0.05, allow_insecure=True)
    try:
        async with receiving([200]) as receiver:
            ids = [await put(kernel, receiver.url) for _ in range(30)]
            for _ in range(200):
                counts = await asyncio.gather(kernel.webhooks.run_due(4), other.run_due(4))
                if sum(counts) == 0:
                    break
    finally:
        await other.aclose()
    assert sorted(receiver.ids()) == sorted(ids)
    for webhook_id in ids:
        assert [a["attempt"] for a in await outbox.attempts_of(webhook_id)] == [1]
        assert (await outbox.get(webhook_id))["state"] == "delivered"


async def test_a_sender_killed_mid_send_is_replaced_after_its_lease(kernel) -> None:
    dying = WebhookSender(db=kernel.db, events=kernel.events, allow_insecure=True, lease_s=1.0)
    try:
        async with receiving([200]) as receiver:
            receiver.hold = 1
            webhook_id = await put(kernel, receiver.url)
            task = asyncio.get_running_loop().create_task(dying.run_due())
            await first_request(receiver, task)
            task.cancel()  # killed while the receiver holds the request
            with pytest.raises(asyncio.CancelledError):
                await task
            receiver.release()
            assert await kernel.webhooks.run_due() == 0  # still leased
            await asyncio.sleep(1.05)
            row = await settle(kernel.webhooks, webhook_id)
    finally:
        await dying.aclose()
    assert row["state"] == "delivered"
    assert receiver.ids() == [webhook_id, webhook_id]  # at least once: receivers dedupe on webhook-id
    assert [a["attempt"] for a in await outbox.attempts_of(webhook_id)] == [1]


async def test_a_sender_whose_lease_ran_out_does_not_overwrite_the_outcome(kernel) -> None:
    slow = WebhookSender(db=kernel.db, events=kernel.events, retry_base_s=0.05, allow_insecure=True, lease_s=0.2)
    try:
        async with receiving([500, 200]) as receiver:
            receiver.hold = 1  # the slow sender's request waits; the second is answered 200 at once
            webhook_id = await put(kernel, receiver.url)
            task = asyncio.get_running_loop().create_task(slow.run_due())
            await first_request(receiver, task)
            await asyncio.sleep(0.25)  # past the slow sender's lease
            assert await kernel.webhooks.run_due() == 1  # the lease ran out: taken over
            receiver.release()
            assert await task == 1  # its 500 arrives after the row was delivered
    finally:
        await slow.aclose()
    row = await outbox.get(webhook_id)
    assert row["state"] == "delivered" and row["attempts"] == 1
    attempts = await outbox.attempts_of(webhook_id)
    assert sorted((a["attempt"], a["status_code"]) for a in attempts) == [(1, 200), (1, 500)]  # both recorded


async def test_a_late_success_still_ends_it(kernel) -> None:
    slow = WebhookSender(db=kernel.db, events=kernel.events, retry_base_s=10, allow_insecure=True, lease_s=0.2)
    other = WebhookSender(db=kernel.db, events=kernel.events, retry_base_s=10, allow_insecure=True)
    try:
        async with receiving([200, 500]) as receiver:
            receiver.hold = 1  # the slow sender's request waits; the second is answered 500 at once
            webhook_id = await put(kernel, receiver.url)
            task = asyncio.get_running_loop().create_task(slow.run_due())
            await first_request(receiver, task)
            await asyncio.sleep(0.25)  # past the slow sender's lease
            assert await other.run_due() == 1
            assert (await outbox.get(webhook_id))["state"] == "pending"  # retried in 10 s
            receiver.release()
            assert await task == 1
    finally:
        await slow.aclose()
        await other.aclose()
    assert (await outbox.get(webhook_id))["state"] == "delivered"
    assert len(receiver.requests) == 2


async def test_the_loop_beside_the_workers_sends_on_wake_up(kernel) -> None:
    background = Background(kernel, workers=1)
    await background.start()
    try:
        assert background.webhook_loop is not None
        async with receiving([200]) as receiver:
            await asyncio.sleep(0.05)  # the loop is idle, waiting
            started = time.monotonic()
            webhook_id = await put(kernel, receiver.url)
            while not receiver.requests and time.monotonic() - started < 5:
                await asyncio.sleep(0.01)
            woke_after = time.monotonic() - started
            while (await outbox.get(webhook_id))["state"] == "pending" and time.monotonic() - started < 5:
                await asyncio.sleep(0.01)
    finally:
        stopping = time.monotonic()
        await background.stop()
    assert receiver.ids() == [webhook_id]
    assert woke_after < 0.9  # the wake-up, not the one-second poll
    assert (await outbox.get(webhook_id))["state"] == "delivered"
    assert time.monotonic() - stopping < 2
