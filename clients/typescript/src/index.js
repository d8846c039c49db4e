// tollway-client: call Tollway's tools from JavaScript and TypeScript, paying by x402 or credits.
//
// A call sends the input; a 402 is paid by signing the x402 requirement it carries (within the
// spend caps) and sending the same bytes again with the payment and X-Quote-ID; an identity that
// holds credits pays from them with no 402 round trip. A job's 202 is waited for by the
// WebSocket and by polling at once; polling is the source of truth.

import { randomUUID } from "node:crypto";

import { privateKeyToAccount } from "viem/accounts";
import WebSocket from "ws";

import { InvalidRequest, PaymentRequired, SpendCapExceeded, TransportError, WaitTimeout } from "./errors.js";
import { errorFromAnswer, errorFromJob } from "./errors.js";
import { checkReceipt } from "./receipts.js";
import { agentProof, chainId, decodePaymentRequired, signPayment } from "./signing.js";
import { TOOLS, toolMethods } from "./tools.js";

export * from "./errors.js";
export { canonicalJson, checkReceipt, verifyReceipt } from "./receipts.js";
export { TOOLS, toolMethods } from "./tools.js";

const PAY_WITH = ["auto", "credits", "x402"];
const TERMINAL = new Set(["completed", "failed"]);
// Polling backoff: 300 ms, 600 ms, 1 s, 2 s, then 5 s while the push channel is proven (it
// delivered its snapshot and is still open); 2 s when it is not, since polling is then alone.
export const POLL_DELAYS_MS = [300, 600, 1000, 2000];
const RELAXED_MS = 5000;
const ALONE_MS = 2000;

export function pollDelayMs(attempt, pushAlive) {
  if (attempt < POLL_DELAYS_MS.length) return POLL_DELAYS_MS[attempt];
  return pushAlive ? RELAXED_MS : ALONE_MS;
}

/** "0.005" -> 5000n micro-USDC (null stays null). */
export function toMicro(usdc) {
  if (usdc === null || usdc === undefined) return null;
  const [whole, fraction = ""] = String(usdc).trim().split(".");
  if (!/^\d+$/.test(whole) || !/^\d{0,6}$/.test(fraction)) throw new TypeError(`not a USDC amount: ${usdc}`);
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, "0"));
}

/** 5000n -> "0.005000". */
export function fromMicro(micro) {
  const text = micro.toString().padStart(7, "0");
  return `${text.slice(0, -6)}.${text.slice(-6)}`;
}

async function readJson(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    return body && typeof body === "object" && !Array.isArray(body) ? body : {};
  } catch {
    return {};
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Client {
  /**
   * Identify with `walletKey` (pays by x402 and spends the wallet's credits with a signed agent
   * proof) or `token` (an access token: pays from credits). `maxPaymentUsdc` caps one call's
   * x402 payment (default "1.00"), `maxSpendUsdc` the client's total (default none); a quote
   * above either throws SpendCapExceeded before anything is signed. `payWith`: "auto", "credits"
   * or "x402".
   */
  constructor({
    baseUrl = "http://127.0.0.1:8402",
    walletKey = null,
    token = null,
    maxPaymentUsdc = "1.00",
    maxSpendUsdc = null,
    payWith = "auto",
    waitTimeoutMs = 420_000,
    fetch: fetchImpl = globalThis.fetch,
  } = {}) {
    if (!PAY_WITH.includes(payWith)) throw new TypeError(`payWith must be one of ${PAY_WITH}, not ${payWith}`);
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.account = walletKey ? privateKeyToAccount(walletKey.startsWith("0x") ? walletKey : `0x${walletKey}`) : null;
    this.token = token;
    this.maxPaymentMicro = toMicro(maxPaymentUsdc);
    this.maxSpendMicro = toMicro(maxSpendUsdc);
    this.payWith = payWith;
    this.waitTimeoutMs = waitTimeoutMs;
    this.spentMicro = 0n; // what this client has paid by x402
    this._fetch = fetchImpl;
    this._chainId = null;
    this._keys = null;
  }

  /** What this client has paid by x402, in USDC ("0.005000"). */
  get spentUsdc() {
    return fromMicro(this.spentMicro);
  }

  // -- identity and HTTP -----------------------------------------------------------------

  async _networkChainId() {
    if (this._chainId === null) {
      const health = await readJson(await this._request("GET", "/healthz"));
      this._chainId = chainId(health.network);
    }
    return this._chainId;
  }

  /** Who is asking: the access token, else the wallet with a proof of this one request. */
  async _identity(method, path, body, scope) {
    if (this.token) return { Authorization: `Bearer ${this.token}` };
    if (!this.account) return {};
    const chain = await this._networkChainId();
    const proof = await agentProof(this.account, { chain, scope, method, path, body });
    return { "X-Agent-ID": this.account.address, "X-Agent-Proof": proof };
  }

  _pathPrefix() {
    return new URL(this.baseUrl).pathname.replace(/\/+$/, "");
  }

  async _request(method, path, { body, headers } = {}) {
    try {
      return await this._fetch(this.baseUrl + path, { method, body, headers });
    } catch (err) {
      throw new TransportError("unreachable", `${method} ${this.baseUrl}${path}: ${err.message}`);
    }
  }

  /** One request, retried while the service says the same idempotency key is in progress. */
  async _send(method, path, body, headers) {
    for (let attempt = 0; ; attempt++) {
      const response = await this._request(method, path, { body, headers });
      if (response.status !== 409 || attempt >= 30) return response;
      const answer = await readJson(response.clone());
      if (answer.error !== "idempotency_in_progress") return response;
      await sleep(1000 * Number(response.headers.get("retry-after") ?? "1"));
    }
  }

  async _get(path) {
    const headers = await this._identity("GET", this._pathPrefix() + path, "", "read");
    const response = await this._request("GET", path, { headers });
    const answer = await readJson(response);
    if (response.status !== 200) throw errorFromAnswer(response.status, answer);
    return answer;
  }

  // -- tools -----------------------------------------------------------------------------

  _cap(amount, limit) {
    if (this.maxPaymentMicro !== null && amount > this.maxPaymentMicro) {
      throw new SpendCapExceeded(
        "spend_cap_exceeded",
        `the quote of ${fromMicro(amount)} USDC is above the cap of ${fromMicro(this.maxPaymentMicro)} a call`,
      );
    }
    if (limit !== null && amount > limit) {
      throw new SpendCapExceeded("spend_cap_exceeded", `the quote of ${fromMicro(amount)} USDC is above this call's cap`);
    }
    if (this.maxSpendMicro !== null && this.spentMicro + amount > this.maxSpendMicro) {
      throw new SpendCapExceeded(
        "spend_cap_exceeded",
        `paying ${fromMicro(amount)} USDC would take this client past its cap of ${fromMicro(this.maxSpendMicro)}`,
      );
    }
  }

  async _pay(spec, path, body, base, quoted, limit) {
    const quote = await readJson(quoted);
    const requirement = decodePaymentRequired(quoted.headers.get("payment-required")).accepts[0];
    const amount = BigInt(requirement.amount);
    this._cap(amount, limit);
    const headers = {
      ...base,
      [spec.paymentHeader]: await signPayment(this.account, requirement),
      "X-Quote-ID": quote.quote_id ?? requirement.extra?.quoteId ?? "",
    };
    const response = await this._send(spec.method, path, body, headers);
    if (response.status === 200 || response.status === 202) this.spentMicro += amount;
    const settlement = response.headers.get("payment-response");
    const payment = {
      method: "x402",
      amountUsdc: fromMicro(amount),
      settlement: settlement ? JSON.parse(Buffer.from(settlement, "base64").toString("utf8")) : null,
    };
    return { response, payment };
  }

  /**
   * Call a tool by name (or spec), paying as the client is set up to; a job is waited for
   * (`wait: false`: its acceptance is returned). Refusals throw TollwayErrors.
   */
  async call(tool, input, { idempotencyKey, wait = true, timeoutMs, payWith, maxPaymentUsdc } = {}) {
    const spec = typeof tool === "string" ? TOOLS[tool] : tool;
    if (!spec) throw new TypeError(`no tool ${tool}`);
    const pay = payWith ?? this.payWith;
    if (!PAY_WITH.includes(pay)) throw new TypeError(`payWith must be one of ${PAY_WITH}, not ${pay}`);
    const body = JSON.stringify(input);
    let path = spec.path;
    for (const name of spec.pathParams) path = path.replace(`{${name}}`, encodeURIComponent(String(input[name])));
    const base = { "Content-Type": "application/json" };
    if (spec.idempotency !== "ignored") {
      // Every call of a tool that honours a key sends one, so a retry is answered, not run, again.
      base["Idempotency-Key"] = idempotencyKey ?? `tw-${randomUUID()}`;
    } else if (idempotencyKey !== undefined) {
      throw new InvalidRequest("invalid_request", `${spec.name} does not honour an Idempotency-Key`);
    }
    const headers = { ...base };
    if (pay === "x402") headers["X-Payment-Method"] = "x402";
    else Object.assign(headers, await this._identity(spec.method, this._pathPrefix() + path, body, "write"));
    let response = await this._send(spec.method, path, body, headers);
    let payment = { method: "credits", amountUsdc: null, settlement: null };
    if (response.status === 402) {
      const quote = await readJson(response.clone());
      if (quote.error === "payment_required") {
        if (pay === "credits" || !this.account) throw errorFromAnswer(402, quote);
        ({ response, payment } = await this._pay(spec, path, body, base, response, toMicro(maxPaymentUsdc)));
      }
    }
    const answer = await readJson(response);
    if (response.status === 200 && spec.mode === "inline") {
      const data = answer.data ?? answer;
      return { data, payment, requestId: data.request_id, receiptId: data.receipt_id };
    }
    if (response.status === 202) {
      const accepted = {
        requestId: answer.request_id,
        tool: answer.tool ?? spec.name,
        status: answer.status,
        receiptId: answer.receipt_id ?? null,
        message: answer.message ?? null,
        payment,
        body: answer,
      };
      if (!wait) return accepted;
      const done = await this.wait(accepted.requestId, { timeoutMs });
      return { ...done, payment };
    }
    throw errorFromAnswer(response.status, answer);
  }

  callTool(spec, input, options) {
    return this.call(spec, input, options);
  }

  // -- jobs ------------------------------------------------------------------------------

  /** The Job resource now (GET /v1/requests/{id}). */
  job(requestId) {
    return this._get(`/v1/requests/${encodeURIComponent(requestId)}`);
  }

  _websocketUrl(requestId) {
    const url = new URL(`${this.baseUrl}/v1/requests/subscribe`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("request_ids", requestId);
    return url;
  }

  /**
   * Wait for a job by WebSocket and polling at once (waitTimeoutMs, 420 s, by default): its
   * result, or JobFailed with its error_code, or WaitTimeout.
   */
  async wait(requestId, { timeoutMs } = {}) {
    const url = this._websocketUrl(requestId);
    const headers = await this._identity("GET", url.pathname, "", "read");
    const limit = timeoutMs ?? this.waitTimeoutMs;
    return new Promise((resolve, reject) => {
      let finished = false;
      let pushAlive = false;
      let socket = null;
      let pollTimer = null;
      const finish = (error, job, channel) => {
        if (finished) return;
        finished = true;
        clearTimeout(deadline);
        clearTimeout(pollTimer);
        if (socket) socket.terminate();
        if (error) reject(error);
        else if (job.status === "failed") reject(errorFromJob(job));
        else resolve({ requestId, receiptId: job.receipt_id ?? null, result: job.result, job, channel });
      };
      const deadline = setTimeout(
        () =>
          finish(
            new WaitTimeout("wait_timeout", `job ${requestId} did not finish within ${limit} ms; it may still`, {
              body: { request_id: requestId },
            }),
          ),
        limit,
      );
      try {
        socket = new WebSocket(url, { headers, handshakeTimeout: 10_000 });
        socket.on("message", (raw) => {
          let message;
          try {
            message = JSON.parse(raw.toString());
          } catch {
            return;
          }
          if (message.request_id !== requestId || message.type !== "job") return;
          pushAlive = true;
          if (TERMINAL.has(message.status)) {
            const { type, snapshot, ...job } = message;
            finish(null, job, "websocket");
          }
        });
        socket.on("close", () => {
          pushAlive = false;
        });
        socket.on("error", () => {
          pushAlive = false; // refused or cut: polling carries on alone
        });
      } catch {
        pushAlive = false;
      }
      let attempt = 0;
      const poll = async () => {
        if (finished) return;
        try {
          const job = await this.job(requestId);
          if (TERMINAL.has(job.status)) return finish(null, job, "polling");
        } catch (err) {
          if (err.status && err.status < 500 && err.status !== 429) return finish(err);
        }
        if (!finished) pollTimer = setTimeout(poll, pollDelayMs(attempt++, pushAlive));
      };
      pollTimer = setTimeout(poll, pollDelayMs(attempt++, pushAlive));
    });
  }

  // -- money and receipts ----------------------------------------------------------------

  /** GET /v1/balance: the caller's credits (and a wallet's on-chain balance). */
  balance() {
    return this._get("/v1/balance");
  }

  /** Buy `amount` USDC of credits by x402 (POST /v1/credits/top-up; a wallet only), within the caps. */
  async topUp(amount) {
    if (!this.account) throw new PaymentRequired("payment_required", "a top-up is paid by a wallet: give walletKey");
    const spec = { method: "POST", paymentHeader: "payment-signature" };
    const path = "/v1/credits/top-up";
    const body = JSON.stringify({ amount: String(amount) });
    const base = { "Content-Type": "application/json" };
    const quoted = await this._send("POST", path, body, base);
    if (quoted.status !== 402) throw errorFromAnswer(quoted.status, await readJson(quoted));
    const { response } = await this._pay(spec, path, body, base, quoted, null);
    const answer = await readJson(response);
    if (response.status !== 200 && response.status !== 202) throw errorFromAnswer(response.status, answer);
    return answer;
  }

  /** One of the caller's receipts as served (GET /v1/receipts/{id}). */
  receipt(receiptId) {
    return this._get(`/v1/receipts/${encodeURIComponent(receiptId)}`);
  }

  /** The service's published receipt keys (GET /v1/receipts/keys), kept after the first ask. */
  async receiptKeys({ refresh = false } = {}) {
    if (this._keys === null || refresh) {
      const response = await this._request("GET", "/v1/receipts/keys");
      const answer = await readJson(response);
      if (response.status !== 200) throw errorFromAnswer(response.status, answer);
      this._keys = answer;
    }
    return this._keys;
  }

  /** The receipt (fetched when given by id), checked with the published keys; throws
   * ReceiptInvalid when it does not verify. verifyReceipt(receipt, keys) needs no network. */
  async verifyReceipt(receipt) {
    const served = typeof receipt === "string" ? await this.receipt(receipt) : receipt;
    let keys = await this.receiptKeys();
    if (!keys.keys?.some((k) => k.key_id === served.key_id)) keys = await this.receiptKeys({ refresh: true });
    checkReceipt(served, keys);
    return served;
  }
}

Object.assign(Client.prototype, toolMethods);
