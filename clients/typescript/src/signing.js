// What a wallet signs (viem): the x402 payment a 402 asks for (an EIP-3009
// TransferWithAuthorization of USDC, EIP-712) and the agent proof (X-Agent-Proof) that lets it
// spend its credits.

import { createHash, randomBytes } from "node:crypto";

const TRANSFER_WITH_AUTHORIZATION = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};
const AGENT_PROOF = {
  AgentProof: [
    { name: "agent", type: "address" },
    { name: "scope", type: "string" },
    { name: "method", type: "string" },
    { name: "path", type: "string" },
    { name: "bodyHash", type: "bytes32" },
    { name: "issuedAt", type: "uint64" },
    { name: "expiresAt", type: "uint64" },
    { name: "nonce", type: "bytes32" },
  ],
};

const nonce32 = () => `0x${randomBytes(32).toString("hex")}`;

/** The x402 `PAYMENT-REQUIRED` header: base64 JSON {x402Version, accepts: [requirements]}. */
export function decodePaymentRequired(header) {
  return JSON.parse(Buffer.from(header, "base64").toString("utf8"));
}

/** 84532 from "eip155:84532". */
export function chainId(network) {
  return Number(network.split(":")[1]);
}

/** The x402 v2 payment header value for one requirement of a 402: an EIP-3009 authorization of
 * exactly `amount` to `payTo`, valid from a little before now. */
export async function signPayment(account, requirement, { validForS = 300 } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const authorization = {
    from: account.address,
    to: requirement.payTo,
    value: BigInt(requirement.amount),
    validAfter: BigInt(now - 5),
    validBefore: BigInt(now + Math.max(validForS, 30)),
    nonce: nonce32(),
  };
  const extra = requirement.extra ?? {};
  const signature = await account.signTypedData({
    domain: {
      name: extra.name ?? "USDC",
      version: extra.version ?? "2",
      chainId: chainId(requirement.network),
      verifyingContract: requirement.asset,
    },
    types: TRANSFER_WITH_AUTHORIZATION,
    primaryType: "TransferWithAuthorization",
    message: authorization,
  });
  const payload = {
    x402Version: 2,
    accepted: requirement,
    payload: {
      signature,
      authorization: Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, String(v)])),
    },
  };
  return Buffer.from(JSON.stringify(payload)).toString("base64");
}

/** An X-Agent-Proof for one request (`path` without the query): base64url JSON of the EIP-712
 * AgentProof message and its signature, valid 120 s, with a fresh nonce. */
export async function agentProof(account, { chain, scope, method, path, body = "" }) {
  const issuedAt = Math.floor(Date.now() / 1000);
  const message = {
    agent: account.address,
    scope,
    method: method.toUpperCase(),
    path,
    bodyHash: `0x${createHash("sha256").update(body).digest("hex")}`,
    issuedAt,
    expiresAt: issuedAt + 120,
    nonce: nonce32(),
  };
  const signature = await account.signTypedData({
    domain: { name: "Tollway", version: "1", chainId: chain },
    types: AGENT_PROOF,
    primaryType: "AgentProof",
    message: { ...message, issuedAt: BigInt(issuedAt), expiresAt: BigInt(message.expiresAt) },
  });
  return Buffer.from(JSON.stringify({ message, signature })).toString("base64url");
}
