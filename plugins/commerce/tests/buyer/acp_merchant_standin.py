"""A stand-in ACP merchant on 127.0.0.1 (the standard library's threaded HTTP server), for the
buyer side's tests: the Agentic Commerce Protocol 2026-01-30 checkout API, a product feed
snapshot, and the PSP beside it that mints the delegated payment tokens the merchant charges.

No answer here is recorded from a real merchant. The shapes are written from the protocol's
own examples (`fixtures/acp-2026-01-30/examples.agentic_checkout.json`: the payment handler,
line items, totals, fulfilment options, links, the 3-D Secure session and the `requires_3ds`
error) and its RFCs (rfc.agentic_checkout §3, §4, §6; rfc.product_feeds §3.4):

* `GET /.well-known/acp.json` (rfc.discovery, no credential): the RFC's example document of a
  direct seller with feeds (rfc.product_feeds §3.5), its `api_base_url` the stand-in's URL; a
  test may answer another document (`discovery`), raw bytes, another status
  (`discovery_status`) or add the feed's Link of a Tollway merchant (`discovery_feed_link`);
* `GET /feed/metadata.json`, `GET /feed/products.jsonl`: the product feed snapshot of `catalogue`;
* `POST /checkout_sessions` (201), `POST /checkout_sessions/{id}` (update), `GET /checkout_sessions/{id}`,
  `POST .../complete`, `POST .../cancel` (405 once completed or canceled). Every request needs
  `Authorization: Bearer <TOKEN>` (401), `API-Version: 2026-01-30` (400 with `supported_versions`),
  and every POST an `Idempotency-Key` (400 `idempotency_key_required`); the same key and body
  answer the stored answer again (`Idempotent-Replayed: true`), another body 422
  `idempotency_conflict`. With `signing_key` set, `Signature`/`Timestamp` are checked (401).
* Sessions price items at the catalogue's price *now* (a test raises it after the feed was read),
  offer two shipping options (standard 500, express 1500 minor units), and tax 10 % of the items.
  Until an option is selected a session is `not_ready_for_payment`. An item marked `out_of_stock`
  makes the session `not_ready_for_payment` with an `out_of_stock` error message.
* `complete` takes `payment_data.instrument.credential.token`: a token minted by the PSP below,
  for this session, unexpired, unused, for at least the total. An item marked `decline` answers
  400 `payment_declined` (the operation's 200 is a completed session only); `3ds` puts the
  session, once ready, in `authentication_required` (with the example's `authentication_metadata`) and a completion
  without `authentication_result` is refused 400 `requires_3ds`. A success charges the token
  (`charges`) and answers the session `completed` with its order.
* The PSP: `POST /psp/v1/shared_payment/issued_tokens` (form fields as Stripe's API names them:
  `payment_method`, `usage_limits[currency|max_amount|expires_at]`, `seller_details[external_id]`,
  `shared_metadata[checkout_session_id]`; `Idempotency-Key` honoured) answers an issued token `spt_...`.
* `refund(session_id, amount, secret)`: the merchant refunds part of a completed order and
  gives the signed `order_update` event (all the order's refunds) it sends to the platform.

Every request and answer is kept (`exchanges`) so a test can validate each against the
protocol's JSON Schemas; every checkout request that arrives, faulty or not, is counted in
`requests` ((method, path)).

Fault switches, each a count of checkout requests it applies to (decremented as used):
`down` answers that many checkout requests (any method) 503 without doing anything;
`lose_complete` drops that many complete requests unread (the connection closes, nothing done);
`drop_complete_answer` completes (charges) and then drops the connection instead of answering
(the answer is lost; the Idempotency-Key keeps it, so a repeat answers it); `fail_after_complete`
completes (charges) and answers 500, which is not kept against the key (rfc §6.5), so a repeat is
a fresh request, refused 400 for a session already completed; `down_after_complete` is added to
`down` once a complete is done (the merchant goes down right after charging).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import rfc8785

from tollway_commerce.acp.discovery import FEED_REL

TOKEN = "acp_test_token_for_the_standin"
VERSION = "2026-01-30"
EXAMPLES = Path(__file__).parent.parent / "fixtures" / "acp-2026-01-30" / "examples.agentic_checkout.json"
SHIPPING = (("ship_standard", "Standard", 500), ("ship_express", "Express", 1500))
HANDLER_ID = "card_tokenized"


@dataclasses.dataclass
class Item:
    title: str
    price: int  # minor units
    currency: str = "usd"
    description: str = ""
    out_of_stock: bool = False  # the feed says so, and so does checkout
    decline: bool = False  # the card is declined at completion
    three_ds: bool = False  # completion needs 3-D Secure


@dataclasses.dataclass
class Exchange:
    method: str
    path: str
    request: Any
    status: int
    answer: Any


def _examples() -> dict[str, Any]:
    return json.loads(EXAMPLES.read_text())


class Merchant:
    """The stand-in's state: its catalogue, sessions, idempotency records, tokens and charges."""

    def __init__(self) -> None:
        self.catalogue: dict[str, Item] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.keys: dict[tuple[str, str], tuple[str, int, Any]] = {}  # (path, key) -> (body hash, status, answer)
        self.tokens: dict[str, dict[str, Any]] = {}
        self.token_keys: dict[str, tuple[str, dict[str, str]]] = {}  # key -> (token id, first parameters)
        self.charges: list[tuple[str, int, str]] = []  # (session id, amount, token)
        self.exchanges: list[Exchange] = []
        self.token_requests: list[dict[str, str]] = []
        self.signing_key: str | None = None
        self.feed_updated_at = "2026-11-27T12:00:00Z"
        self.requests: list[tuple[str, str]] = []
        self.down = 0
        self.lose_complete = 0
        self.drop_complete_answer = 0
        self.fail_after_complete = 0
        self.down_after_complete = 0
        self.lock = threading.Lock()
        self.url = ""
        self.handler = copy.deepcopy(
            _examples()["create_checkout_session_response"]["capabilities"]["payment"]["handlers"][0]
        )
        self.auth_metadata = _examples()["checkout_session_authentication_required"]["authentication_metadata"]
        self.discovery: Any = None  # None: discovery_document(); a dict, or bytes answered as they are
        self.discovery_status = 200
        self.discovery_feed_link = False
        self.discovery_reads = 0

    # --- discovery ---------------------------------------------------------------------------

    def discovery_document(self) -> Any:
        if self.discovery is not None:
            return self.discovery
        return {
            "protocol": {"name": "acp", "version": VERSION, "supported_versions": [VERSION]},
            "api_base_url": self.url,
            "transports": ["rest"],
            "capabilities": {"services": ["checkout", "feeds"]},
        }

    # --- the feed ----------------------------------------------------------------------------

    def feed_lines(self) -> bytes:
        lines = []
        for item_id, item in sorted(self.catalogue.items()):
            product = {
                "id": f"prod_{item_id}",
                "title": item.title,
                "description": {"plain": item.description},
                "url": f"{self.url}/products/{item_id}",
                "media": [{"type": "image", "url": f"{self.url}/images/{item_id}.jpg", "alt_text": item.title}],
                "variants": [
                    {
                        "id": item_id,
                        "title": item.title,
                        "price": {"amount": item.price, "currency": item.currency.upper()},
                        "availability": {
                            "available": not item.out_of_stock,
                            "status": "out_of_stock" if item.out_of_stock else "in_stock",
                        },
                        "seller": {"name": "Stand-in Shop"},
                    }
                ],
            }
            lines.append(json.dumps(product))
        return ("\n".join(lines) + "\n").encode()

    # --- sessions ----------------------------------------------------------------------------

    def _totals(self, session: dict[str, Any]) -> None:
        items = sum(t["amount"] for li in session["line_items"] for t in li["totals"] if t["type"] == "subtotal")
        tax = sum(t["amount"] for li in session["line_items"] for t in li["totals"] if t["type"] == "tax")
        selected = {s["option_id"] for s in session["selected_fulfillment_options"]}
        shipping = sum(cost for oid, _, cost in SHIPPING if oid in selected)
        session["totals"] = [
            {"type": "items_base_amount", "display_text": "Item(s) total", "amount": items},
            {"type": "subtotal", "display_text": "Subtotal", "amount": items},
            {"type": "tax", "display_text": "Tax", "amount": tax},
            {"type": "fulfillment", "display_text": "Fulfillment", "amount": shipping},
            {"type": "total", "display_text": "Total", "amount": items + tax + shipping},
        ]
        out = [li for li in session["line_items"] if li.get("availability_status") == "out_of_stock"]
        session["messages"] = [
            {
                "type": "error",
                "code": "out_of_stock",
                "param": f"$.line_items[{session['line_items'].index(li)}]",
                "content_type": "plain",
                "content": f"{li['name']} is out of stock.",
            }
            for li in out
        ]
        if session["status"] in ("completed", "canceled", "authentication_required"):
            return
        session["status"] = "ready_for_payment" if selected and not out else "not_ready_for_payment"
        if session["status"] == "ready_for_payment" and any(
            self.catalogue[li["item"]["id"]].three_ds for li in session["line_items"]
        ):
            session["status"] = "authentication_required"  # the issuer asks for 3-D Secure on this card
            session["authentication_metadata"] = self.auth_metadata

    def _line_items(self, ids: list[str]) -> list[dict[str, Any]]:
        counts: dict[str, int] = {}
        for item_id in ids:
            counts[item_id] = counts.get(item_id, 0) + 1
        lines = []
        for n, (item_id, quantity) in enumerate(counts.items()):
            item = self.catalogue[item_id]
            base = item.price * quantity
            tax = base // 10
            line = {
                "id": f"li_{n}_{item_id}",
                "item": {"id": item_id},
                "quantity": quantity,
                "name": item.title,
                "unit_amount": item.price,
                "totals": [
                    {"type": "items_base_amount", "display_text": "Base Amount", "amount": base},
                    {"type": "subtotal", "display_text": "Subtotal", "amount": base},
                    {"type": "tax", "display_text": "Tax", "amount": tax},
                    {"type": "total", "display_text": "Total", "amount": base + tax},
                ],
            }
            line["availability_status"] = "out_of_stock" if item.out_of_stock else "in_stock"
            lines.append(line)
        return lines

    def create(self, body: dict[str, Any]) -> tuple[int, Any]:
        ids = [li.get("id") for li in body.get("line_items") or []]
        unknown = [i for i in ids if i not in self.catalogue]
        if unknown:
            return 400, {
                "type": "invalid_request",
                "code": "invalid",
                "message": f"No item {unknown[0]}",
                "param": "$.line_items",
            }
        session_id = "cs_" + secrets.token_hex(8)
        session: dict[str, Any] = {
            "id": session_id,
            "protocol": {"version": VERSION},
            "capabilities": {"payment": {"handlers": [self.handler]}},
            "status": "not_ready_for_payment",
            "currency": body.get("currency", "usd"),
            "line_items": self._line_items(ids),
            "fulfillment_options": [
                {
                    "type": "shipping",
                    "id": oid,
                    "title": title,
                    "carrier": "USPS",
                    "totals": [{"type": "total", "display_text": title, "amount": cost}],
                }
                for oid, title, cost in SHIPPING
            ],
            "selected_fulfillment_options": [],
            "messages": [],
            "links": [{"type": "terms_of_use", "url": f"{self.url}/legal/terms-of-use"}],
        }
        if "buyer" in body:
            session["buyer"] = body["buyer"]
        if "fulfillment_details" in body:
            session["fulfillment_details"] = body["fulfillment_details"]
        self._totals(session)
        self.sessions[session_id] = session
        return 201, session

    def update(self, session_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        session = self.sessions.get(session_id)
        if session is None:
            return 404, {"type": "invalid_request", "code": "not_found", "message": "No such session"}
        if session["status"] in ("completed", "canceled"):
            return 400, {"type": "invalid_request", "code": "invalid", "message": f"The session is {session['status']}"}
        for selected in body.get("selected_fulfillment_options") or []:
            if selected["option_id"] not in {oid for oid, _, _ in SHIPPING}:
                return 400, {
                    "type": "invalid_request",
                    "code": "invalid",
                    "message": "No such option",
                    "param": "$.selected_fulfillment_options",
                }
        if "selected_fulfillment_options" in body:
            session["selected_fulfillment_options"] = body["selected_fulfillment_options"]
        if "fulfillment_details" in body:
            session["fulfillment_details"] = body["fulfillment_details"]
        self._totals(session)
        return 200, session

    def complete(self, session_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        session = self.sessions.get(session_id)
        if session is None:
            return 404, {"type": "invalid_request", "code": "not_found", "message": "No such session"}
        if session["status"] == "authentication_required" and "authentication_result" not in body:
            return 400, _examples()["error_400_requires_3ds"]
        if session["status"] == "authentication_required":
            session["status"] = "ready_for_payment"  # authenticated: the stand-in takes any outcome given
        if session["status"] != "ready_for_payment":
            return 400, {"type": "invalid_request", "code": "invalid", "message": f"The session is {session['status']}"}
        total = next(t["amount"] for t in session["totals"] if t["type"] == "total")
        payment = body.get("payment_data") or {}
        token_id = ((payment.get("instrument") or {}).get("credential") or {}).get("token")
        token = self.tokens.get(token_id or "")
        problem = None
        if payment.get("handler_id") != HANDLER_ID or token is None:
            problem = "unknown payment token"
        elif token["used"] or token["usage_limits"]["expires_at"] < time.time():
            problem = "the payment token is used or expired"
        elif token["shared_metadata"].get("checkout_session_id") != session_id:
            problem = "the payment token is for another session"
        elif token["usage_limits"]["max_amount"] < total or token["usage_limits"]["currency"] != session["currency"]:
            problem = "the payment token does not cover the total"
        if problem is not None:
            return 400, {"type": "invalid_request", "code": "invalid", "message": problem, "param": "$.payment_data"}
        items = [self.catalogue[li["item"]["id"]] for li in session["line_items"]]
        if any(i.decline for i in items):  # the complete operation's 200 is a completed session: a decline is an Error
            return 400, {
                "type": "invalid_request",
                "code": "payment_declined",
                "message": "The card was declined.",
                "param": "$.payment_data",
            }
        token["used"] = True
        self.charges.append((session_id, total, token_id))
        session["status"] = "completed"
        if "buyer" in body:
            session["buyer"] = body["buyer"]
        session["order"] = {
            "id": "ord_" + session_id[3:],
            "checkout_session_id": session_id,
            "permalink_url": f"{self.url}/orders/ord_{session_id[3:]}",
            "status": "confirmed",
        }
        return 200, session

    def cancel(self, session_id: str) -> tuple[int, Any]:
        session = self.sessions.get(session_id)
        if session is None:
            return 404, {"type": "invalid_request", "code": "not_found", "message": "No such session"}
        if session["status"] in ("completed", "canceled"):
            return 405, {
                "type": "invalid_request",
                "code": "not_cancelable",
                "message": f"The session is {session['status']}",
            }
        session["status"] = "canceled"
        session.pop("authentication_metadata", None)
        session["messages"] = [
            {"type": "info", "content_type": "plain", "content": "Checkout session has been canceled."}
        ]
        return 200, session

    # --- the PSP -----------------------------------------------------------------------------

    def refund(
        self, session_id: str, amount: int, secret: str, *, status: str = "confirmed"
    ) -> tuple[bytes, dict[str, str]]:
        """Refund `amount` minor units of a completed session's order: the signed `order_update`
        the merchant sends (every refund of the order so far, as 2026-01-30's `refunds[]` is),
        as (raw body, headers) for the test to deliver."""
        session = self.sessions[session_id]
        assert session["status"] == "completed", session["status"]
        refunds = session.setdefault("refunds", [])
        refunds.append({"type": "original_payment", "amount": amount})
        return self.order_event(session_id, secret, status=status)

    def order_event(self, session_id: str, secret: str, *, status: str = "confirmed") -> tuple[bytes, dict[str, str]]:
        """The signed `order_update` of the session's order as it stands (Merchant-Signature: hex HMAC-SHA256)."""
        session = self.sessions[session_id]
        event = {
            "type": "order_update",
            "data": {
                "type": "order",
                "checkout_session_id": session_id,
                "permalink_url": session["order"]["permalink_url"],
                "status": status,
                "refunds": list(session.get("refunds", [])),
            },
        }
        raw = json.dumps(event).encode()
        signature = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
        return raw, {"Merchant-Signature": signature, "Content-Type": "application/json"}

    def issue_token(self, fields: dict[str, str], key: str | None) -> tuple[int, Any]:
        self.token_requests.append(fields)
        if key and key in self.token_keys:
            first_id, first_fields = self.token_keys[key]
            if first_fields != fields:  # as Stripe answers a key reused with other parameters
                return 400, {
                    "error": {
                        "type": "idempotency_error",
                        "message": "Keys for idempotent requests can only be used with the same parameters "
                        "they were first used with.",
                    }
                }
            return 200, self.tokens[first_id]
        token = {
            "id": "spt_" + secrets.token_hex(10),
            "object": "shared_payment.issued_token",
            "created": int(time.time()),
            "payment_method": fields.get("payment_method"),
            "seller_details": {"external_id": fields.get("seller_details[external_id]")},
            "shared_metadata": {"checkout_session_id": fields.get("shared_metadata[checkout_session_id]")},
            "status": "active",
            "usage_limits": {
                "currency": fields["usage_limits[currency]"],
                "max_amount": int(fields["usage_limits[max_amount]"]),
                "expires_at": int(fields["usage_limits[expires_at]"]),
            },
            "used": False,
        }
        self.tokens[token["id"]] = token
        if key:
            self.token_keys[key] = (token["id"], dict(fields))
        return 200, token


def _signature(key: str, stamp: str, raw: bytes) -> str:
    body = rfc8785.dumps(json.loads(raw)) if raw else b""
    digest = hmac.new(key.encode(), stamp.encode() + b"." + body, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _handler(merchant: Merchant) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(
            self, status: int, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None
        ) -> None:
            data = raw if raw is not None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if raw is None else "application/x-ndjson")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _discovery(self) -> None:
            merchant.discovery_reads += 1
            document = merchant.discovery_document()
            raw = document if isinstance(document, bytes) else json.dumps(document).encode()
            self.send_response(merchant.discovery_status)
            self.send_header("Content-Type", "text/html" if isinstance(document, bytes) else "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.send_header("Cache-Control", "public, max-age=3600")
            if merchant.discovery_feed_link:
                self.send_header("Link", f'</feed>; rel="{FEED_REL}"')
            self.end_headers()
            self.wfile.write(raw)

        def _fault(self, method: str) -> bool:
            """Count the checkout request; answer it 503 or drop it when a fault switch says so."""
            merchant.requests.append((method, self.path))
            if merchant.down > 0:
                merchant.down -= 1
                self._send(503, {"type": "service_unavailable", "code": "unavailable", "message": "Down"})
                return True
            if method == "POST" and self.path.endswith("/complete") and merchant.lose_complete > 0:
                merchant.lose_complete -= 1
                self.close_connection = True  # closed unanswered: the request is lost
                return True
            return False

        def _refuse(self) -> tuple[int, Any] | None:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return 401, {"type": "invalid_request", "code": "unauthorized", "message": "Bad bearer token"}
            if self.headers.get("API-Version") != VERSION:
                code = "missing_api_version" if not self.headers.get("API-Version") else "unsupported_api_version"
                return 400, {
                    "type": "invalid_request",
                    "code": code,
                    "message": "API-Version",
                    "supported_versions": [VERSION],
                }
            return None

        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            with merchant.lock:
                if self.path == "/.well-known/acp.json":
                    self._discovery()
                    return
                refused = self._refuse()
                if refused is not None:
                    self._send(*refused)
                    return
                if self.path == "/feed/metadata.json":
                    self._send(
                        200, {"id": "feed_standin", "target_country": "US", "updated_at": merchant.feed_updated_at}
                    )
                    return
                if self.path == "/feed/products.jsonl":
                    self._send(200, None, raw=merchant.feed_lines())
                    return
                if self.path.startswith("/checkout_sessions/"):
                    if self._fault("GET"):
                        return
                    session = merchant.sessions.get(self.path.rsplit("/", 1)[1])
                    status, answer = (
                        (200, session)
                        if session
                        else (404, {"type": "invalid_request", "code": "not_found", "message": "No such session"})
                    )
                    merchant.exchanges.append(Exchange("GET", self.path, None, status, copy.deepcopy(answer)))
                    self._send(status, answer)
                    return
                self._send(404, {"type": "invalid_request", "code": "not_found", "message": "No such path"})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with merchant.lock:
                if self.path.startswith("/psp/"):
                    fields = dict(parse_qsl(raw.decode()))
                    self._send(*merchant.issue_token(fields, self.headers.get("Idempotency-Key")))
                    return
                if self._fault("POST"):
                    return
                body = json.loads(raw) if raw else {}
                refused = self._refuse()
                key = self.headers.get("Idempotency-Key")
                if refused is None and not key:
                    refused = (
                        400,
                        {
                            "type": "invalid_request",
                            "code": "idempotency_key_required",
                            "message": "Idempotency-Key header is required on all POST requests",
                        },
                    )
                if refused is None and merchant.signing_key is not None:
                    stamp = self.headers.get("Timestamp") or ""
                    if not hmac.compare_digest(
                        self.headers.get("Signature") or "", _signature(merchant.signing_key, stamp, raw)
                    ):
                        refused = (
                            401,
                            {"type": "invalid_request", "code": "invalid_signature", "message": "Bad signature"},
                        )
                if refused is not None:
                    merchant.exchanges.append(Exchange("POST", self.path, body, refused[0], refused[1]))
                    self._send(*refused)
                    return
                digest = hashlib.sha256(rfc8785.dumps(body)).hexdigest()
                stored = merchant.keys.get((self.path, key))
                if stored is not None:
                    if stored[0] != digest:
                        answer = {
                            "type": "invalid_request",
                            "code": "idempotency_conflict",
                            "message": "Idempotency-Key has already been used with a different request body",
                        }
                        self._send(422, answer)
                        return
                    self._send(stored[1], stored[2], {"Idempotent-Replayed": "true", "Idempotency-Key": key})
                    return
                parts = self.path.strip("/").split("/")
                if parts == ["checkout_sessions"]:
                    status, answer = merchant.create(body)
                elif len(parts) == 2 and parts[0] == "checkout_sessions":
                    status, answer = merchant.update(parts[1], body)
                elif len(parts) == 3 and parts[2] == "complete":
                    status, answer = merchant.complete(parts[1], body)
                elif len(parts) == 3 and parts[2] == "cancel":
                    status, answer = merchant.cancel(parts[1])
                else:
                    status, answer = 404, {"type": "invalid_request", "code": "not_found", "message": "No such path"}
                answer = copy.deepcopy(answer)
                completed = parts[-1] == "complete" and status == 200
                if completed:
                    merchant.down, merchant.down_after_complete = merchant.down + merchant.down_after_complete, 0
                if completed and merchant.fail_after_complete > 0:
                    merchant.fail_after_complete -= 1
                    status, answer = 500, {"type": "processing_error", "code": "internal", "message": "Oops"}
                if status < 500:
                    merchant.keys[(self.path, key)] = (digest, status, answer)
                merchant.exchanges.append(Exchange("POST", self.path, body, status, answer))
                if completed and merchant.drop_complete_answer > 0:
                    merchant.drop_complete_answer -= 1
                    self.close_connection = True  # done and kept, but the answer never leaves
                    return
                self._send(status, answer, {"Idempotency-Key": key})

    return Handler


@contextlib.contextmanager
def acp_merchant() -> Iterator[Merchant]:
    """A fresh stand-in merchant served on a free port of 127.0.0.1 (`.url`)."""
    merchant = Merchant()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(merchant))
    merchant.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield merchant
    finally:
        server.shutdown()
        server.server_close()
