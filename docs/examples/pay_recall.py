import base64, json, os, secrets, sys, time, httpx
from eth_account import Account

BASE = os.environ.get("TOLLWAY_URL", "http://127.0.0.1:8402")
payer = Account.from_key(sys.argv[1])  # a funded key: `tollway dev fund <address> 1` on the local network
body = {"make": "Honda", "model": "Accord", "model_year": 2021}
quote = httpx.post(f"{BASE}/v1/tools/lookup/vehicle-recalls", json=body)  # 402 with the price
req = json.loads(base64.b64decode(quote.headers["PAYMENT-REQUIRED"]))["accepts"][0]
auth = {"from": payer.address, "to": req["payTo"], "value": int(req["amount"]), "validAfter": 0,
        "validBefore": int(time.time()) + 300, "nonce": "0x" + secrets.token_hex(32)}
signed = payer.sign_typed_data(
    {"name": req["extra"]["name"], "version": req["extra"]["version"], "chainId": int(req["network"].split(":")[1]),
     "verifyingContract": req["asset"]},
    {"TransferWithAuthorization": [{"name": n, "type": t} for n, t in [("from", "address"), ("to", "address"),
        ("value", "uint256"), ("validAfter", "uint256"), ("validBefore", "uint256"), ("nonce", "bytes32")]]}, auth)
payload = {"x402Version": 2, "accepted": req, "payload": {"signature": "0x" + signed.signature.hex().removeprefix("0x"),
           "authorization": {k: str(v) for k, v in auth.items()}}}
paid = httpx.post(f"{BASE}/v1/tools/lookup/vehicle-recalls", json=body, headers={
    "payment-signature": base64.b64encode(json.dumps(payload).encode()).decode(), "X-Quote-ID": quote.json()["quote_id"]})
print(paid.status_code, json.dumps(paid.json(), indent=2))
