"""The multi-host test's client, run in the client namespace (`main`, started by tests/support/multihost_cli.py).

It reads one JSON command a line on stdin and answers each with one JSON line on stdout,
so every request of the test crosses the namespaces' network. Commands (`op` names one):
`setup` (an agent with credits and an access token, a funded x402 wallet), `load` (credits
and x402 calls, jobs, gated jobs, watches), `poll` (the operator's watch poll),
`goal` (a compute goal and its cases), `inflight_calls` (gated inline calls left running),
`settle` (their outcomes), `wait_jobs` (until every job is finished) and `after` (calls made
once a host is gone). Every request has a
time limit and every wait a deadline.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from typing import Any

import httpx
from eth_account import Account

from tollway._core.auth.auth_proof import make_agent_proof
from tollway._core.payments.networks import get_network
from tollway.testing import pay_402

TIMEOUT = httpx.Timeout(10.0, connect=3.0)


class Driver:
    def __init__(self, hosts: list[str], operator_token: str) -> None:
        self.hosts = hosts  # base URLs of the API hosts
        self.op = {"Authorization": f"Bearer {operator_token}"}
        self.http = httpx.AsyncClient(timeout=TIMEOUT)
        self.auth: dict[str, str] = {}
        self.payer: Any = None
        self.wallet: Any = None
        self.turn = itertools.cycle(range(len(hosts)))
        self.inflight: list[asyncio.Task[Any]] = []

    def next_host(self) -> str:
        return self.hosts[next(self.turn)]

    async def ready(self, deadline_s: float) -> dict[str, Any]:
        end = time.monotonic() + deadline_s
        for url in self.hosts:
            while True:
                try:
                    if (await self.http.get(f"{url}/healthz", timeout=2)).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > end:
                    raise RuntimeError(f"{url} did not answer within {deadline_s} s")
                await asyncio.sleep(0.2)
        return {"ready": self.hosts}

    async def setup(self, credits: str, wallet_funds: str) -> dict[str, Any]:
        url = self.hosts[0]
        self.wallet = Account.create()  # the agent's own: its write proofs make watches
        agent = (
            await self.http.post(
                f"{url}/v1/tools/internal/agents/register",
                json={"wallet_address": self.wallet.address},
                headers=self.op,
            )
        ).json()
        grant = await self.http.post(
            f"{url}/v1/tools/internal/credits/grant",
            json={"agent_id": agent["agent_id"], "amount": credits},
            headers=self.op,
        )
        assert grant.status_code == 200, grant.text
        token = await self.http.post(
            f"{url}/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=self.op
        )
        self.auth = {"Authorization": f"Bearer {token.json()['token']}"}
        self.payer = Account.create()
        funded = await self.http.post(
            f"{self.hosts[-1]}/v1/tools/internal/chain/fund",
            json={"address": self.payer.address, "amount": wallet_funds},
            headers=self.op,
        )
        assert funded.status_code == 200, funded.text
        return {"agent_id": agent["agent_id"], "payer": self.payer.address}

    def proof(self, method: str, path: str, body: str) -> dict[str, str]:
        """The agent's write proof of this request, as a wallet-holding agent signs it."""
        proof = make_agent_proof(
            self.wallet,
            chain_id=get_network("local").chain_id,
            scope="write",
            method=method,
            path=path,
            body=body.encode(),
            now=int(time.time()),
        )
        return {"X-Agent-ID": self.wallet.address, "X-Agent-Proof": proof, "content-type": "application/json"}

    async def credits_call(self, url: str, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(f"{url}{path}", json=body, headers=self.auth)

    async def x402_call(self, url: str, path: str, body: dict[str, Any]) -> httpx.Response:
        quote = await self.http.post(f"{url}{path}", json=body)
        assert quote.status_code == 402, quote.text
        header = pay_402(self.payer, quote.headers["PAYMENT-REQUIRED"])
        return await self.http.post(f"{url}{path}", json=body, headers={"payment-signature": header})

    async def load(self, n_credits: int, n_x402: int, n_jobs: int, gated: dict[str, Any], keys: list[str]) -> dict:
        echo = "/v1/tools/test/echo"
        calls = [self.credits_call(self.next_host(), echo, {"text": f"credits call {i}"}) for i in range(n_credits)]
        calls += [self.x402_call(self.next_host(), echo, {"text": f"x402 call {i}"}) for i in range(n_x402)]
        answers = await asyncio.gather(*calls)
        bad = [r.text for r in answers if r.status_code != 200]
        assert not bad, bad
        jobs = []
        for i in range(n_jobs):  # half paid by credits, half by x402
            call = self.credits_call if i % 2 == 0 else self.x402_call
            accepted = await call(self.next_host(), "/v1/tools/test/add-numbers", {"a": i, "b": 1})
            assert accepted.status_code == 202, accepted.text
            jobs.append({"id": accepted.json()["request_id"], "paid": "credits" if i % 2 == 0 else "x402"})
        held = []
        for i in range(gated["count"]):
            body = {"a": i, "b": 2, "gate": gated["gate"], "marker": gated["marker"]}
            accepted = await self.credits_call(self.next_host(), "/v1/tools/test/gate-job", body)
            assert accepted.status_code == 202, accepted.text
            held.append({"id": accepted.json()["request_id"], "paid": "credits"})
        watches = []
        for key in keys:
            body = json.dumps({"entity_type": "item", "attribute": "test_file_feed", "key": key, "max_spend": 1})
            made = await self.http.post(
                f"{self.next_host()}/v1/tools/watch", content=body, headers=self.proof("POST", "/v1/tools/watch", body)
            )
            assert made.status_code == 201, made.text
            watches.append(made.json()["data"]["id"])
        return {"calls": len(answers), "jobs": jobs, "gated": held, "watches": watches}

    async def poll(self, url: str) -> dict[str, Any]:
        polled = await self.http.post(f"{url}/v1/tools/internal/watch-sources/test_file_feed/poll", headers=self.op)
        assert polled.status_code == 200, polled.text
        return polled.json()

    async def inflight_calls(self, url: str, n_credits: int, n_x402: int, gate: str, marker: str) -> dict[str, Any]:
        path = "/v1/tools/test/gate-inline"
        body = {"a": 1, "b": 1, "gate": gate, "marker": marker}
        # each payment is signed now, so a call is in flight as soon as its request is sent
        for _ in range(n_credits):
            self.inflight.append(asyncio.create_task(self._outcome(self.credits_call(url, path, body), "credits")))
        for _ in range(n_x402):
            self.inflight.append(asyncio.create_task(self._outcome(self.x402_call(url, path, body), "x402")))
        return {"started": len(self.inflight)}

    @staticmethod
    async def _outcome(call: Any, paid: str) -> dict[str, Any]:
        try:
            answer = await call
        except httpx.HTTPError as exc:
            return {"paid": paid, "outcome": type(exc).__name__}
        return {"paid": paid, "outcome": answer.status_code}

    async def settle(self, deadline_s: float) -> dict[str, Any]:
        done = await asyncio.wait_for(asyncio.gather(*self.inflight), deadline_s)
        self.inflight.clear()
        return {"outcomes": done}

    async def wait_jobs(self, url: str, jobs: list[dict[str, Any]], deadline_s: float) -> dict[str, Any]:
        end = time.monotonic() + deadline_s
        status: dict[str, Any] = {}
        while True:
            for job in jobs:
                if status.get(job["id"], {}).get("status") in ("completed", "failed"):
                    continue
                headers = self.auth if job["paid"] == "credits" else {"X-Agent-ID": self.payer.address}
                with_status = await self.http.get(f"{url}/v1/requests/{job['id']}", headers=headers)
                status[job["id"]] = with_status.json()
            waiting = [j["id"] for j in jobs if status[j["id"]].get("status") not in ("completed", "failed")]
            if not waiting:
                return {"jobs": {i: {"status": s["status"], "result": s.get("result")} for i, s in status.items()}}
            if time.monotonic() > end:
                return {"unfinished": waiting, "jobs": {i: s.get("status") for i, s in status.items()}}
            await asyncio.sleep(0.3)

    async def goal(self, url: str, cases: int) -> dict[str, Any]:
        """A compute goal paid from credits, and an event opening each of `cases` cases."""
        made = await self.http.post(f"{url}/v1/compute", json={"goal": "Decide each refund."}, headers=self.auth)
        assert made.status_code == 202, made.text
        goal_id = made.json()["goal_id"]
        for i in range(cases):
            body = {"event_id": f"e{i}", "case_key": f"inv-{i}", "task": "Decide the refund"}
            opened = await self.http.post(f"{url}/v1/compute/{goal_id}/events", json=body, headers=self.auth)
            assert opened.status_code in (200, 201, 202), opened.text
        return {"goal_id": goal_id}

    async def after(self, url: str, n_credits: int, n_jobs: int) -> dict[str, Any]:
        calls = await asyncio.gather(
            *[self.credits_call(url, "/v1/tools/test/echo", {"text": f"after {i}"}) for i in range(n_credits)]
        )
        assert all(c.status_code == 200 for c in calls), [c.text for c in calls]
        jobs = []
        for i in range(n_jobs):
            accepted = await self.credits_call(url, "/v1/tools/test/add-numbers", {"a": i, "b": 3})
            assert accepted.status_code == 202, accepted.text
            jobs.append({"id": accepted.json()["request_id"], "paid": "credits"})
        return {"calls": len(calls), "jobs": jobs}


async def _main() -> None:
    first = json.loads(sys.stdin.readline())
    driver = Driver(first["hosts"], first["operator_token"])
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print(json.dumps({"ok": True}), flush=True)
    while line := await reader.readline():
        command = json.loads(line)
        op = command.pop("op")
        try:
            answer = await getattr(driver, op)(**command)
        except Exception as exc:  # the test reads it and fails with it
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)
    await driver.http.aclose()


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
