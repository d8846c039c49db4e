// Every refusal as an Error carrying the service's machine code (`code`): the service answers
// {error: <code>, message, details?}; a failed job carries `error_code`. The client's own
// refusals (a spend cap, a wait that ran out, a receipt that does not verify) have codes too.

export class TollwayError extends Error {
  constructor(code, message, { status = null, details = null, body = {} } = {}) {
    super(message ? `${code}: ${message}` : code);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = details;
    this.body = body ?? {};
  }

  get requestId() {
    return this.body?.request_id ?? null;
  }

  get receiptId() {
    return this.body?.receipt_id ?? null;
  }
}

/** 400: refused before any quote or payment (`invalid_request`, `invalid_input`). */
export class InvalidRequest extends TollwayError {}
/** 402 the client would not or could not pay (no wallet, or credits only); `quote` is the 402's body. */
export class PaymentRequired extends TollwayError {
  get quote() {
    return this.body;
  }
}
/** 402 `payment_verification_failed`: the signed payment was refused; nothing was charged. */
export class PaymentFailed extends TollwayError {}
/** The quote was above a spend cap: nothing was signed. */
export class SpendCapExceeded extends TollwayError {}
export class Unauthorized extends TollwayError {}
export class Forbidden extends TollwayError {}
export class NotFound extends TollwayError {}
/** 409/422: an idempotency key reused or in progress, a top-up being settled, … */
export class Conflict extends TollwayError {}
/** 429: `retryAfter` seconds to wait. */
export class RateLimited extends TollwayError {
  get retryAfter() {
    return this.body?.retry_after ?? null;
  }
}
/** 503: a provider not configured or down. */
export class ServiceUnavailable extends TollwayError {}
/** The tool ran and failed: nothing was charged. */
export class ToolFailed extends TollwayError {}
/** A job ended `failed`: `code` is its `error_code`, `job` the Job resource. */
export class JobFailed extends TollwayError {
  get job() {
    return this.body;
  }
}
/** A job did not finish within the wait's timeout (it may still: wait again). */
export class WaitTimeout extends TollwayError {}
/** The service could not be reached, or answered something that is not the API. */
export class TransportError extends TollwayError {}
/** A receipt that does not verify: `code` says why (digest_mismatch, bad_signature, unknown_key, …). */
export class ReceiptInvalid extends TollwayError {}

const BY_CODE = {
  invalid_request: InvalidRequest,
  invalid_input: InvalidRequest,
  payment_required: PaymentRequired,
  payment_verification_failed: PaymentFailed,
  idempotency_key_reused: Conflict,
  idempotency_in_progress: Conflict,
  top_up_in_progress: Conflict,
  not_found: NotFound,
};
const BY_STATUS = {
  400: InvalidRequest,
  401: Unauthorized,
  402: PaymentRequired,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  422: Conflict,
  429: RateLimited,
  503: ServiceUnavailable,
};

/** The error for a refusal the service answered with `status` and `body`. */
export function errorFromAnswer(status, body) {
  if (!body || typeof body.error !== "string") {
    return new TransportError("unexpected_answer", `HTTP ${status}: ${JSON.stringify(body).slice(0, 200)}`, {
      status,
      body,
    });
  }
  const Cls = status === 429 ? RateLimited : (BY_CODE[body.error] ?? BY_STATUS[status] ?? ToolFailed);
  return new Cls(body.error, String(body.message ?? ""), { status, details: body.details ?? null, body });
}

export function errorFromJob(job) {
  return new JobFailed(job.error_code ?? "job_failed", String(job.error ?? ""), {
    status: job.error_status ?? null,
    details: { error_category: job.error_category ?? null },
    body: job,
  });
}
