"""402 quotes: a price for one tool and one exact input, valid until it expires and
usable once. Issuing one writes nothing: its id carries its expiry, amount and a nonce
and authenticates them, with the tool, the input's hash, pay_to and network, by HMACs
under a key every process of the deployment derives from its shared receipt key; a
paid quote is recorded used by one INSERT in the paying request's reservation."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct

from tollway._core.basics.ids import now_ms
from tollway._core.storage import sql

# The id: "q_" + unpadded base64url of 27 bytes (38 characters, within the 40 that the
# quote id columns hold): expiry (unix seconds, 4 bytes), amount (micro-USDC, 6 bytes),
# nonce (5 bytes), `ours` (5 bytes: HMAC over those and pay_to and network, so an id
# we did not mint, or an altered one, is not found) and `bound` (7 bytes: HMAC over all
# of it and the tool and input hash, so a genuine quote sent for another input is a
# mismatch). Accepting a forged id needs both: 96 bits guessed, one request a guess.
PREFIX = "q_"
_LAYOUT = struct.Struct(">I6s5s5s7s")
_ID_CHARS = len(PREFIX) + (_LAYOUT.size * 4 + 2) // 3
MAX_AMOUNT = (1 << 48) - 1
# the label the quote key is derived under (another use of the seed gets another key)
_KEY_LABEL = b"tollway x402 quote id v1"

# The record of a paid quote: its primary key refuses a second use of the same id.
_RECORD_USED = (
    "INSERT INTO tw_quotes (id, tool, input_hash, amount, pay_to, network, expires_ms, used_ms, "
    "created_ms) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}) ON CONFLICT (id) DO NOTHING RETURNING id"
)

# A paid quote's row is needed only while its id could still be paid: an expired id is
# refused from the id alone (`QuoteBook.check`), before its insert. The day's margin
# covers hosts whose clocks disagree.
_PURGE_EXPIRED = "DELETE FROM tw_quotes WHERE expires_ms < {}"
PURGE_MARGIN_MS = 86_400_000


class QuoteProblem(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


# base64url's two letters to standard base64's, and standard's own two (never in an id) to a
# byte strict decoding refuses
_FROM_URLSAFE = bytes.maketrans(b"-_+/", b"+/!!")


def _unb64(text: str) -> bytes | None:
    """The bytes of `text`, a whole number of unpadded base64url quads (an id's 36 letters:
    27 bytes, no bits left over), else None: a letter outside the alphabet, or padding, is
    refused by the strict decoding, so what decodes is the one spelling of its bytes."""
    try:
        return binascii.a2b_base64(text.encode("ascii").translate(_FROM_URLSAFE), strict_mode=True)
    except (binascii.Error, ValueError):  # UnicodeEncodeError is a ValueError
        return None


class QuoteBook:
    """Mints quote ids and checks them, with no storage, for one deployment: `secret` is a
    key every process of it shares (the receipt signing seed), `issued` counts the quotes
    this instance minted (the test kit reads it)."""

    def __init__(self, secret: bytes, *, pay_to: str, network: str, ttl_s: int) -> None:
        if not secret:
            raise ValueError("quotes need the deployment's shared secret")
        # The key's padded blocks hashed once; each tag copies that state (half the work of
        # hmac.digest, which sets a new HMAC up in OpenSSL every call)
        self._mac = hmac.new(hmac.new(secret, _KEY_LABEL, hashlib.sha256).digest(), digestmod=hashlib.sha256)
        self.pay_to = pay_to
        self.network = network
        self.ttl_s = ttl_s
        self._scope = f"{pay_to.lower()}\n{network}".encode()
        self.issued = 0

    def _digest(self, message: bytes) -> bytes:
        mac = self._mac.copy()
        mac.update(message)
        return mac.digest()

    def _tags(self, head: bytes, tool: str, input_hash: str) -> tuple[bytes, bytes]:
        ours = self._digest(b"ours\n" + head + self._scope)[:5]
        bound = self._digest(b"bound\n" + head + ours + f"\n{tool}\n{input_hash}".encode())[:7]
        return ours, bound

    def mint(self, *, tool: str, input_hash: str, amount: int, now: int | None = None) -> dict:
        """A new quote for `amount` micro-USDC, valid `ttl_s` from `now` (unix ms, default now)."""
        if not 0 <= amount <= MAX_AMOUNT:
            raise ValueError(f"a quote's amount must be 0 to {MAX_AMOUNT} micro-USDC")
        expires_s = (now_ms() if now is None else now) // 1000 + self.ttl_s
        head = struct.pack(">I", expires_s) + amount.to_bytes(6, "big") + secrets.token_bytes(5)
        ours, bound = self._tags(head, tool, input_hash)
        self.issued += 1
        return self._quote(PREFIX + _b64(head + ours + bound), tool, input_hash, amount, expires_s)

    def _quote(self, quote_id: str, tool: str, input_hash: str, amount: int, expires_s: int) -> dict:
        return {
            "id": quote_id,
            "tool": tool,
            "input_hash": input_hash,
            "amount": amount,
            "pay_to": self.pay_to,
            "network": self.network,
            "expires_ms": expires_s * 1000,
        }

    def check(self, quote_id: str | None, *, tool: str, input_hash: str) -> dict:
        """The quote of `quote_id` when it is ours, unexpired and for this tool and input,
        else which it is not (nothing read: whether it was used is the reservation's to say)."""
        if not quote_id:
            raise QuoteProblem("missing_quote_id", "Send the quote id from the 402 answer in X-Quote-ID.")
        raw = _unb64(quote_id[len(PREFIX) :]) if len(quote_id) == _ID_CHARS and quote_id.startswith(PREFIX) else None
        if raw is None or len(raw) != _LAYOUT.size:
            raise QuoteProblem("quote_not_found", f"Quote {quote_id} does not exist.")
        expires_s, amount, _nonce, ours, bound = _LAYOUT.unpack(raw)
        head = raw[:15]
        mine_ours, mine_bound = self._tags(head, tool, input_hash)
        if not hmac.compare_digest(ours, mine_ours):
            raise QuoteProblem("quote_not_found", f"Quote {quote_id} does not exist.")
        if expires_s * 1000 < now_ms():
            raise QuoteProblem("quote_expired", f"Quote {quote_id} has expired.")
        if not hmac.compare_digest(bound, mine_bound):
            raise QuoteProblem("quote_mismatch", f"Quote {quote_id} was made for another tool or another input.")
        return self._quote(quote_id, tool, input_hash, int.from_bytes(amount, "big"), expires_s)


def used_values(quote: dict, now: int) -> tuple:
    """The values of `quote`'s record as paid at `now` (`_RECORD_USED`; on PostgreSQL the
    reservation's statement, gateway.py)."""
    q = quote
    return (q["id"], q["tool"], q["input_hash"], q["amount"], q["pay_to"], q["network"], q["expires_ms"], now, now)


def already_used(quote: dict) -> QuoteProblem:
    return QuoteProblem("quote_already_used", f"Quote {quote['id']} was already used.")


async def record_used(quote: dict) -> None:
    """Record `quote` paid; run inside the reservation's transaction, so a payment refused
    later in it (its authorization seen before) leaves the quote unused."""
    if await sql.fetch_one(_RECORD_USED, *used_values(quote, now_ms())) is None:
        raise already_used(quote)


async def purge_expired(now: int | None = None) -> None:
    """Delete the records of paid quotes that expired more than `PURGE_MARGIN_MS` ago."""
    await sql.fetch(_PURGE_EXPIRED, (now_ms() if now is None else now) - PURGE_MARGIN_MS)
