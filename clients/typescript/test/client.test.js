// The TypeScript client against a real `tollway serve` (SQLite, the local test network): a lookup
// paid by x402 within a spend cap, credits, a job waited on by two channels (finished by polling
// when the WebSocket is cut halfway), receipts verified offline, refusals as typed errors.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  Client,
  InvalidRequest,
  POLL_DELAYS_MS,
  PaymentRequired,
  ReceiptInvalid,
  SpendCapExceeded,
  TOOLS,
  checkReceipt,
  pollDelayMs,
  verifyReceipt,
} from "../src/index.js";
import { startService } from "../support/service.js";

const RECALL = { make: "Honda", model: "Accord", model_year: 2021 };
// A routing problem PyVRP works on for about its whole time limit: the job runs ~2.5 s.
const POINTS = [[17, 72], [97, 8], [32, 15], [63, 97], [57, 60], [83, 48], [26, 12], [62, 3], [49, 55], [77, 97]];
const STOPS = Array.from({ length: 40 }, (_, i) => POINTS[i % 10]);
const SOLVE = {
  problem: "routing",
  time_limit_s: 3,
  routing: {
    vehicles: [{ id: "van", capacity: 100, start: { id: "depot" }, count: 5 }],
    stops: STOPS.map((_, i) => ({ id: `s${i}`, demand: 5, location: { id: `s${i}` } })),
    coordinates: [{ id: "depot", x: 50, y: 50 }, ...STOPS.map(([x, y], i) => ({ id: `s${i}`, x: x + (i % 7), y: y + (i % 5) }))],
  },
};

let service;
before(async () => {
  service = await startService();
});
after(async () => {
  await service?.stop();
});

test("a lookup paid by x402, and its receipt verified offline", async () => {
  const tollway = new Client({ baseUrl: service.url, walletKey: await service.fundedWallet("1"), maxPaymentUsdc: "0.01" });
  const answer = await tollway.vehicleRecalls(RECALL);
  assert.equal(answer.data.tool, "vehicle_recalls");
  assert.equal(answer.data.result.total, 1);
  assert.equal(answer.payment.method, "x402");
  assert.equal(answer.payment.amountUsdc, "0.005000");
  assert.equal(answer.payment.settlement.success, true);
  assert.equal(tollway.spentUsdc, "0.005000");

  const receipt = await tollway.verifyReceipt(answer.receiptId);
  assert.equal(receipt.status, "settled");
  const keys = await tollway.receiptKeys();
  assert.equal(verifyReceipt(receipt, keys), true);
  const tampered = { ...receipt, amount_usdc: "0.000001" };
  assert.equal(verifyReceipt(tampered, keys), false);
  assert.throws(() => checkReceipt(tampered, keys), (err) => err instanceof ReceiptInvalid && err.code === "digest_mismatch");
  const forged = { ...receipt, signature: [...receipt.signature].reverse().join("") };
  assert.throws(() => checkReceipt(forged, keys), (err) => err.code === "bad_signature");
});

test("a quote above the spend cap is not signed", async () => {
  const walletKey = await service.fundedWallet("1");
  const capped = new Client({ baseUrl: service.url, walletKey, maxPaymentUsdc: "0.001" });
  await assert.rejects(capped.vehicleRecalls(RECALL), (err) => err instanceof SpendCapExceeded && err.code === "spend_cap_exceeded");
  const total = new Client({ baseUrl: service.url, walletKey, maxSpendUsdc: "0.006" });
  await total.vehicleRecalls(RECALL);
  await assert.rejects(total.vehicleRecalls({ ...RECALL, model_year: 2020 }), SpendCapExceeded);
  assert.equal(total.spentUsdc, "0.005000");
  assert.equal((await total.balance()).on_chain_balance, "0.995000");
});

test("refusals are typed errors with the contract's code", async () => {
  const anonymous = new Client({ baseUrl: service.url });
  await assert.rejects(anonymous.vehicleRecalls({ make: "Honda" }), (err) => {
    assert.ok(err instanceof InvalidRequest);
    assert.equal(err.code, "invalid_request");
    assert.equal(err.status, 400);
    assert.ok(err.details.some((d) => d.field === "model_year"));
    return true;
  });
  await assert.rejects(anonymous.vehicleRecalls(RECALL), (err) => {
    assert.ok(err instanceof PaymentRequired);
    assert.equal(err.quote.amount_usdc, "0.005000");
    return true;
  });
});

test("an access token pays from credits", async () => {
  const tollway = new Client({ baseUrl: service.url, token: await service.tokenWithCredits("1") });
  const answer = await tollway.call("vehicle_recalls", RECALL);
  assert.equal(answer.payment.method, "credits");
  assert.equal((await tollway.balance()).credits_balance, "0.995000");
  assert.equal((await tollway.verifyReceipt(answer.receiptId)).payment_method, "credits");
});

test("a job waited on finishes by WebSocket, and by polling when the WebSocket is cut halfway", async () => {
  const token = await service.tokenWithCredits("5");
  const whole = new Client({ baseUrl: service.url, token });
  const cut = new Client({ baseUrl: service.cutting_url, token });
  const backoff = POLL_DELAYS_MS.splice(0, POLL_DELAYS_MS.length, 60_000, 60_000, 60_000, 60_000);
  let bySocket;
  try {
    bySocket = await whole.solve({ ...SOLVE, time_limit_s: 1 }); // polling held back: only the socket can finish it
  } finally {
    POLL_DELAYS_MS.splice(0, POLL_DELAYS_MS.length, ...backoff);
  }
  const byPolling = await cut.solve(SOLVE, { idempotencyKey: "ts-cut-halfway" });
  assert.equal(bySocket.channel, "websocket");
  assert.equal(byPolling.channel, "polling");
  for (const done of [byPolling, bySocket]) {
    assert.equal(done.job.status, "completed");
    assert.ok(done.result.solution.routes.length > 0);
    assert.equal(done.payment.method, "credits");
  }
});

test("a job paid by x402 is waited for as its payer", async () => {
  const tollway = new Client({ baseUrl: service.url, walletKey: await service.fundedWallet("1"), payWith: "x402" });
  const accepted = await tollway.solve({ ...SOLVE, time_limit_s: 1 }, { wait: false });
  assert.equal(accepted.payment.method, "x402");
  const done = await tollway.wait(accepted.requestId, { timeoutMs: 60_000 });
  assert.equal(done.job.status, "completed");
  assert.equal((await tollway.verifyReceipt(done.receiptId)).tool, "solve");
});

test("the backoff and the generated tools", () => {
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => pollDelayMs(i, true)), [300, 600, 1000, 2000, 5000]);
  assert.equal(pollDelayMs(9, false), 2000);
  assert.equal(TOOLS.solve.idempotency, "required");
  assert.equal(TOOLS.vehicle_recalls.mode, "inline");
  assert.equal(typeof Client.prototype.vehicleRecalls, "function");
});
