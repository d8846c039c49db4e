"""Schemathesis against the served OpenAPI document: every operation, fuzzed with
a small bounded number of cases, must answer no 5xx, only statuses the document
declares, and bodies that match their declared schemas.

The service runs in the test's loop (uvicorn on a free port) with kernel-test
tools and a test watch source (nothing reaches an upstream) and rate limits raised
for the run; agent routes get a signed-in access token with credits, operator
routes the operator token.
The CLI runs in a subprocess so the loop keeps serving while it fuzzes."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx
from eth_account import Account

from tests.support.echo_plugin import ECHO, ECHO_KEYED
from tests.support.feed_plugin import FeedPlugin
from tests.support.jobs_plugin import ADD, ADD_KEYED
from tests.support.serving import serve_app
from tollway._core.auth.auth_proof import make_agent_proof
from tollway._core.plugin_api.hookspecs import hookimpl
from tollway._runtime.service import http_app
from tollway.testing import OPERATOR, credits_session

SCHEMATHESIS = str(Path(sys.executable).parent / "schemathesis")
HIGH_LIMITS = {f"TOLLWAY_RATE_LIMIT_{c}": "100000/60" for c in ("PAID", "EXPENSIVE", "FREE_READ", "LOOKUP")}
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance"


class FuzzedTools:
    """Tools that run without any upstream: an inline one, an inline one taking an
    optional key, and two jobs (one requiring Idempotency-Key); no worker runs them."""

    @hookimpl
    def register_tools(self, register):
        for tool in (ECHO, ECHO_KEYED, ADD, ADD_KEYED):
            register(tool)


def config(agent_token: str, wallet: str) -> str:
    """Operator routes: the operator token; top-up (refused to access tokens, 503): the
    wallet's X-Agent-ID, and a 503 is its documented answer to any bearer header the
    fuzzer adds; everything else: the agent's access token (from signing in)."""
    return f"""
[[operations]]
include-path-regex = "^/v1/tools/internal/"
headers = {{ Authorization = "{OPERATOR["Authorization"]}" }}

[[operations]]
include-path = "/v1/credits/top-up"
headers = {{ X-Agent-ID = "{wallet}" }}
# a generated case may carry `Authorization: Bearer …`, which the route answers 503 by design
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

[[operations]]
exclude-path-regex = "^/v1/(tools/internal/|credits/top-up)"
headers = {{ Authorization = "Bearer {agent_token}" }}
"""


class ModelProvider:
    """An `llm` provider, so goals are accepted (no session runs while the fuzzer calls)."""

    @hookimpl
    def register_providers(self, register):
        from tollway._core.plugin_api.providers import Provider

        register(Provider(kind="llm", name="fuzz_model", build=lambda settings, http: object()))


def _app_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


# a GitHub App configured (connections answer their links); GitHub itself is never reached
GITHUB_APP = {
    "TOLLWAY_GOALS_GITHUB_APP_ID": "1",
    "TOLLWAY_GOALS_GITHUB_APP_SLUG": "fuzz",
    "TOLLWAY_GOALS_GITHUB_PRIVATE_KEY": _app_key(),
    "TOLLWAY_GOALS_GITHUB_CLIENT_ID": "Iv1.fuzz",
    "TOLLWAY_GOALS_GITHUB_CLIENT_SECRET": "fuzz-secret",
    "TOLLWAY_GOALS_GITHUB_API_URL": "http://127.0.0.1:9",
    "TOLLWAY_GOALS_GITHUB_WEB_URL": "http://127.0.0.1:9",
}


async def test_schemathesis_finds_nothing(kernel_factory, tmp_path):
    # the goals plugin too: its routes (cases, events, approval pages) are fuzzed with the rest
    kernel = await kernel_factory(
        plugins=[("fuzzed", FuzzedTools()), ("feed", FeedPlugin()), ("model", ModelProvider())],
        installed={"tollway_goals"},
        env={**HIGH_LIMITS, **GITHUB_APP},
    )
    async with serve_app(http_app(kernel, manage_kernel=False)) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            account = Account.create()
            wallet = account.address
            await credits_session(client, "500", wallet=wallet)
            # a signed-in token, so the watch routes are fuzzed past their refusal of operator-issued ones
            proof = make_agent_proof(
                account,
                chain_id=84532,
                scope="write",
                method="POST",
                path="/v1/auth/sign-in",
                body=b"",
                now=int(time.time()),
            )
            signed_in = await client.post("/v1/auth/sign-in", headers={"X-Agent-ID": wallet, "X-Agent-Proof": proof})
            assert signed_in.status_code == 200, signed_in.text
        token = signed_in.json()["token"]
        (tmp_path / "schemathesis.toml").write_text(config(token, wallet))
        proc = await asyncio.create_subprocess_exec(
            SCHEMATHESIS,
            "--config-file",
            str(tmp_path / "schemathesis.toml"),
            "run",
            f"{url}/schema/openapi.json",
            "--checks",
            CHECKS,
            "--max-examples",
            "8",
            "--phases",
            "examples,fuzzing",
            "--seed",
            "1",
            "--workers",
            "1",
            "--no-shrink",
            "--generation-database",
            "none",
            "--request-timeout",
            "20",
            "--no-color",
            "--output-truncate",
            "false",
            cwd=str(tmp_path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 240)
    report = out.decode(errors="replace")
    assert proc.returncode == 0, report
    assert "No issues found" in report or " passed" in report, report
