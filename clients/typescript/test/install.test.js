// `npm install ./clients/typescript` in a fresh folder gives a working package that imports as
// `tollway-client` and verifies a receipt with no service at all: installed as a copy
// (`--install-links`, as from the registry: only its `files`, its dependencies fetched), and as
// npm's plain install of a folder, a link to it (whose dependencies are the folder's own, as
// `npm ci` installed them: npm installs none for a folder outside the project).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const CHECK = `
import { createHash, generateKeyPairSync, sign } from "node:crypto";
import { Client, TOOLS, canonicalJson, verifyReceipt } from "tollway-client";

const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
const receipt = { receipt_id: "rcpt_1", amount_usdc: "0.005000", key_id: "rk_test", alg: "Ed25519" };
const digest = createHash("sha256").update(canonicalJson(receipt)).digest("hex");
const signature = sign(null, Buffer.from(digest, "hex"), privateKey).toString("base64url");
const keys = { keys: [{ key_id: "rk_test", alg: "Ed25519", public_key: raw.toString("base64url") }] };
if (!verifyReceipt({ ...receipt, digest, signature }, keys)) throw new Error("a good receipt did not verify");
if (verifyReceipt({ ...receipt, amount_usdc: "0.000001", digest, signature }, keys)) throw new Error("a tampered receipt verified");
if (typeof Client.prototype.vehicleRecalls !== "function" || !TOOLS.solve) throw new Error("no generated tools");
new Client({ walletKey: "0x" + "11".repeat(32) });
console.log("ok", import.meta.resolve("tollway-client"));
`;

async function installAndCheck(flags, expected) {
  const folder = await mkdtemp(join(tmpdir(), "tollway-client-install-"));
  try {
    await writeFile(join(folder, "package.json"), JSON.stringify({ name: "fresh", private: true, type: "module" }));
    await run("npm", ["install", ...flags, "--prefer-offline", "--no-audit", "--no-fund", PACKAGE], { cwd: folder });
    await writeFile(join(folder, "check.js"), CHECK);
    const { stdout } = await run(process.execPath, ["check.js"], { cwd: folder });
    assert.match(stdout, expected);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

test("npm install --install-links ./clients/typescript: a copy, as from the registry", { timeout: 180_000 }, () =>
  installAndCheck(["--install-links"], /^ok file:.*\/node_modules\/tollway-client\/src\/index\.js/),
);

test("npm install ./clients/typescript: a link to the folder", { timeout: 180_000 }, () =>
  installAndCheck([], new RegExp(`^ok file://${PACKAGE}/src/index\\.js`)),
);
