// Offline receipt verification: the signed form is the receipt minus `signature` and `digest`,
// canonicalised with RFC 8785; `digest` is its SHA-256 hex and `signature` an Ed25519 signature
// (base64url, no padding) over the 32 digest bytes, by the key named `key_id` of those the
// service publishes at GET /v1/receipts/keys.

import { createHash, createPublicKey, verify } from "node:crypto";

import { ReceiptInvalid } from "./errors.js";

// An Ed25519 public key's SubjectPublicKeyInfo is this prefix and the 32 raw bytes.
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** RFC 8785 canonical JSON: sorted keys (by UTF-16 code units), ECMAScript number and string forms. */
export function canonicalJson(value) {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("not a finite number");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
}

function publicKeys(keys) {
  const list = Array.isArray(keys) ? keys : Array.isArray(keys?.keys) ? keys.keys : null;
  if (list === null) return new Map(Object.entries(keys ?? {}));
  return new Map(list.filter((k) => (k.alg ?? "Ed25519") === "Ed25519").map((k) => [k.key_id, k.public_key]));
}

/** Throw ReceiptInvalid unless `receipt` (as served) is signed by one of `keys` (the /v1/receipts/keys answer). */
export function checkReceipt(receipt, keys) {
  if (typeof receipt?.signature !== "string" || typeof receipt?.digest !== "string") {
    throw new ReceiptInvalid("unsigned", "the receipt has no signature or digest");
  }
  const { signature, digest: claimed, ...signed } = receipt;
  let canonical;
  try {
    canonical = canonicalJson(signed);
  } catch (err) {
    throw new ReceiptInvalid("not_canonical", `the receipt cannot be canonicalised: ${err.message}`);
  }
  const digest = createHash("sha256").update(canonical, "utf8").digest("hex");
  if (digest !== claimed) throw new ReceiptInvalid("digest_mismatch", "the receipt's fields do not hash to its digest");
  const publicKey = publicKeys(keys).get(String(receipt.key_id));
  if (publicKey === undefined) throw new ReceiptInvalid("unknown_key", `no published key ${receipt.key_id}`);
  let valid = false;
  try {
    const key = createPublicKey({
      key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(publicKey, "base64url")]),
      format: "der",
      type: "spki",
    });
    valid = verify(null, Buffer.from(digest, "hex"), key, Buffer.from(signature, "base64url"));
  } catch {
    valid = false;
  }
  if (!valid) throw new ReceiptInvalid("bad_signature", "the signature does not verify with the receipt's key");
}

/** True when `receipt` (as served) is signed by one of `keys` (the /v1/receipts/keys answer). */
export function verifyReceipt(receipt, keys) {
  try {
    checkReceipt(receipt, keys);
    return true;
  } catch (err) {
    if (err instanceof ReceiptInvalid) return false;
    throw err;
  }
}
