// The types of tollway-client; the tools' input and output types are generated into tools.d.ts.

import type { ToolMethods, ToolName } from "./tools.js";

export * from "./tools.js";

/** What the client knows of one tool: its route, how it is paid, how it answers. */
export interface ToolSpec {
  name: string;
  method: string;
  path: string;
  mode: "inline" | "job";
  paymentHeader: string;
  idempotency: "required" | "optional" | "ignored";
  pathParams: string[];
}

export type PayWith = "auto" | "credits" | "x402";

export interface ClientOptions {
  /** The service, default http://127.0.0.1:8402. */
  baseUrl?: string;
  /** A wallet's private key: pays by x402 and spends the wallet's credits with a signed agent proof. */
  walletKey?: string | null;
  /** An access token (tw_at_…): pays from the agent's credits. */
  token?: string | null;
  /** The most one call may pay by x402, in USDC (default "1.00"; null: no cap). */
  maxPaymentUsdc?: string | null;
  /** The most this client may pay by x402 in all, in USDC (default: no cap). */
  maxSpendUsdc?: string | null;
  /** "auto" (credits when they cover the price, else x402), "credits" or "x402". */
  payWith?: PayWith;
  /** How long a job is waited for, default 420 000 ms. */
  waitTimeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

export interface CallOptions {
  payWith?: PayWith;
  /** This call's own cap on an x402 payment, in USDC. */
  maxPaymentUsdc?: string;
  /** Sent as Idempotency-Key where the tool honours one (else one is made for the call). */
  idempotencyKey?: string;
}

export interface JobCallOptions extends CallOptions {
  /** false: return the job's acceptance instead of waiting for it. */
  wait?: boolean;
  timeoutMs?: number;
}

/** How a call was paid: by "x402" (with the settlement from PAYMENT-RESPONSE) or from "credits". */
export interface Payment {
  method: "x402" | "credits";
  amountUsdc: string | null;
  settlement: { success: boolean; transaction?: string; network?: string; payer?: string } | null;
}

/** An inline tool's answer: `data` is the answer's `data` (the call's ids and the tool's output). */
export interface ToolResult<T> {
  data: T;
  payment: Payment;
  requestId: string;
  receiptId: string;
}

/** A job tool's 202: paid for and queued; wait for it with client.wait(requestId). */
export interface JobAccepted {
  requestId: string;
  tool: string;
  status: string;
  receiptId: string | null;
  message: string | null;
  payment: Payment;
  body: Record<string, unknown>;
}

/** The Job resource (GET /v1/requests/{id}). */
export interface Job {
  request_id: string;
  status: "pending" | "processing" | "completed" | "failed";
  tool: string;
  receipt_id: string | null;
  created_at: string;
  updated_at: string;
  message?: string;
  result?: unknown;
  error?: string;
  error_code?: string;
  error_category?: string;
  error_status?: number;
}

/** A completed job; `channel` says which channel saw it finish first. */
export interface JobResult {
  requestId: string;
  receiptId: string | null;
  result: any;
  job: Job;
  channel: "websocket" | "polling";
  payment?: Payment;
}

export interface ReceiptKey {
  key_id: string;
  alg: "Ed25519";
  public_key: string;
  created_at?: string;
  active?: boolean;
}

export interface ReceiptKeys {
  keys: ReceiptKey[];
}

export type Receipt = Record<string, unknown> & { receipt_id: string; key_id: string; signature: string; digest: string };

export interface Client extends ToolMethods {}

export declare class Client {
  constructor(options?: ClientOptions);
  readonly account: { address: `0x${string}` } | null;
  /** What this client has paid by x402, in USDC ("0.005000"). */
  readonly spentUsdc: string;
  call(tool: ToolName | ToolSpec, input: Record<string, unknown>, options?: JobCallOptions): Promise<any>;
  job(requestId: string): Promise<Job>;
  wait(requestId: string, options?: { timeoutMs?: number }): Promise<JobResult>;
  balance(): Promise<Record<string, unknown>>;
  topUp(amount: string): Promise<Record<string, unknown>>;
  receipt(receiptId: string): Promise<Receipt>;
  receiptKeys(options?: { refresh?: boolean }): Promise<ReceiptKeys>;
  verifyReceipt(receipt: Receipt | string): Promise<Receipt>;
}

export declare function canonicalJson(value: unknown): string;
export declare function checkReceipt(receipt: Receipt, keys: ReceiptKeys | ReceiptKey[] | Record<string, string>): void;
export declare function verifyReceipt(
  receipt: Receipt,
  keys: ReceiptKeys | ReceiptKey[] | Record<string, string>,
): boolean;
export declare function pollDelayMs(attempt: number, pushAlive: boolean): number;
export declare const POLL_DELAYS_MS: number[];
export declare function toMicro(usdc: string | null | undefined): bigint | null;
export declare function fromMicro(micro: bigint): string;

export declare class TollwayError extends Error {
  constructor(code: string, message: string, options?: { status?: number | null; details?: unknown; body?: unknown });
  /** The contract's machine code: invalid_request, payment_required, spend_cap_exceeded, … */
  code: string;
  status: number | null;
  details: unknown;
  body: any;
  readonly requestId: string | null;
  readonly receiptId: string | null;
}
export declare class InvalidRequest extends TollwayError {}
export declare class PaymentRequired extends TollwayError {
  readonly quote: any;
}
export declare class PaymentFailed extends TollwayError {}
export declare class SpendCapExceeded extends TollwayError {}
export declare class Unauthorized extends TollwayError {}
export declare class Forbidden extends TollwayError {}
export declare class NotFound extends TollwayError {}
export declare class Conflict extends TollwayError {}
export declare class RateLimited extends TollwayError {
  readonly retryAfter: number | null;
}
export declare class ServiceUnavailable extends TollwayError {}
export declare class ToolFailed extends TollwayError {}
export declare class JobFailed extends TollwayError {
  readonly job: Job;
}
export declare class WaitTimeout extends TollwayError {}
export declare class TransportError extends TollwayError {}
export declare class ReceiptInvalid extends TollwayError {}
export declare function errorFromAnswer(status: number, body: unknown): TollwayError;
export declare function errorFromJob(job: Job): JobFailed;
