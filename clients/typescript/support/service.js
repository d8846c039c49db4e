// The running service the client tests call: clients/testing/serve.py (a real `tollway serve` on
// SQLite and the local test network, an NHTSA stand-in, a proxy that cuts WebSockets), started
// with the checkout's Python (TOLLWAY_PYTHON, else ../../.venv/bin/python).

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

const HERE = dirname(fileURLToPath(import.meta.url));
const CLIENTS = resolve(HERE, "..", "..");
const PYTHON = process.env.TOLLWAY_PYTHON ?? join(CLIENTS, "..", ".venv", "bin", "python");

export async function startService() {
  if (!existsSync(PYTHON)) throw new Error(`no Python at ${PYTHON}: run \`make test\` (or set TOLLWAY_PYTHON)`);
  const child = spawn(PYTHON, [join(CLIENTS, "testing", "serve.py")], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise((ok, fail) => {
    lines.once("line", ok);
    child.once("exit", (code) => fail(new Error(`clients/testing/serve.py exited ${code}`)));
  });
  const service = JSON.parse(first);

  async function operator(path, body) {
    const response = await fetch(service.url + path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${service.operator_token}` },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  }

  return {
    ...service,
    operator,
    /** A new wallet's private key, with `usdc` test USDC on the local network. */
    async fundedWallet(usdc = "1") {
      const key = generatePrivateKey();
      await operator("/v1/tools/internal/chain/fund", { address: privateKeyToAccount(key).address, amount: usdc });
      return key;
    },
    async tokenWithCredits(usdc = "1") {
      const { agent_id } = await operator("/v1/tools/internal/agents/register", {});
      await operator("/v1/tools/internal/credits/grant", { agent_id, amount: usdc });
      return (await operator("/v1/tools/internal/access-tokens", { agent_id })).token;
    },
    async stop() {
      const exited = new Promise((ok) => child.once("exit", ok));
      child.stdin.end();
      await exited;
    },
  };
}
