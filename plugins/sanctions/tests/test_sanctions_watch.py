"""The sanctions lists as a watch source, as callers of the watch resource meet it: a key
that is not an OFAC entry number is refused in a sentence that reads after the field's name."""
from __future__ import annotations

import json

from eth_account import Account

from tollway.testing import http_client, proof_headers

WATCH = "/v1/tools/watch"


async def test_a_key_that_is_no_entry_number_is_refused_in_a_readable_sentence(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_sanctions"})
    raw = json.dumps({"entity_type": "company", "attribute": "us_treasury_sanctions", "key": "OFAC-2676", "max_spend": 1}).encode()
    headers = proof_headers(Account.create(), scope="write", method="POST", path=WATCH, body=raw)
    async with http_client(kernel) as client:
        r = await client.post(WATCH, content=raw, headers={**headers, "content-type": "application/json"})
    says = "must be an OFAC entry number (ent_num) written in decimal digits, e.g. 2676"
    assert r.status_code == 400 and r.json()["error"] == "invalid_input", r.text
    assert r.json()["message"] == f"key {says}." and r.json()["details"] == [{"field": "key", "message": says}]
