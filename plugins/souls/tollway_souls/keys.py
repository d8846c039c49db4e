"""The soul key after registration: rotation (a new key shown once; the old one stops working
at once) and revocation, each authorised by the soul's wallet write proof, never by the key
itself nor an access token; and the payout hold that follows a rotation: for 24 hours a payout
to an address this soul never paid out to needs the wallet's write proof as well."""

from __future__ import annotations

from typing import Any

from tollway import Refusal, Route, RouteCall, iso, now_ms, storage

from . import catalogue
from .tables import SoulAgent as Souls
from .wire import KeyRevoked, KeyRotated

HOLD_MS = 24 * 3600 * 1000  # after a rotation, new payout addresses need the wallet's proof this long
TAGS = ("souls seller dashboard",)
# a payout the kernel made to this address for this agent
_PAID_TO = storage.statement(
    "SELECT id FROM tw_payouts WHERE agent_id = {} AND lower(to_address) = {} AND status = 'paid' LIMIT 1"
)


async def wallets_soul(call: RouteCall) -> dict[str, Any]:
    """The soul of the wallet whose write proof the request carries (or whose key the front holds)."""
    caller = call.caller
    if caller is None or caller.via not in ("proof", "wallet"):
        raise Refusal(
            "invalid_agent_proof",
            "The soul key is managed with the soul's wallet: send X-Agent-ID with a write X-Agent-Proof signed by it "
            "(a soul key or an access token is not enough).",
            status=401,
            details={"reason": "missing"},
        )
    row = await Souls.select().where(Souls.agent_id == caller.agent_id).first()
    if row is None:
        raise Refusal("not_found", "This wallet has no soul.", status=404)
    return row


async def rotate(call: RouteCall) -> KeyRotated:
    soul, key, now = await wallets_soul(call), catalogue.new_key(), now_ms()
    await Souls.update(
        {
            Souls.key_hash: catalogue.key_hash(key),
            Souls.key_rotated_ms: now,
            Souls.key_revoked_ms: None,
            Souls.updated_ms: now,
        }
    ).where(Souls.id == soul["id"])
    return KeyRotated(
        soul_agent_id=soul["id"], soul_key=key, rotated_at=iso(now), new_address_payouts_held_until=iso(now + HOLD_MS)
    )


async def revoke(call: RouteCall) -> KeyRevoked:
    soul, now = await wallets_soul(call), now_ms()
    revoked = soul["key_revoked_ms"] or now
    await Souls.update({Souls.key_revoked_ms: revoked, Souls.updated_ms: now}).where(Souls.id == soul["id"])
    return KeyRevoked(soul_agent_id=soul["id"], revoked=True, revoked_at=iso(int(revoked)))


async def hold_new_address(call: RouteCall, soul: dict[str, Any], to: str) -> None:
    """Refuse (403 `new_payout_address_held`) a payout to an address this soul never paid out to,
    within 24 hours of a rotation, unless the request carries the soul's wallet write proof. The
    soul's own wallet is never held. A proof that is sent is checked (and spent) in any case."""
    proof = await call.wallet_proof()
    rotated = soul["key_rotated_ms"]
    if rotated is None or now_ms() >= int(rotated) + HOLD_MS:
        return
    if proof is not None and proof.agent_id == soul["agent_id"]:
        return
    if to.lower() == (soul["wallet_address"] or "").lower():
        return
    paid = await _PAID_TO.row(soul["agent_id"], to.lower())
    if paid is None:
        held_until = iso(int(rotated) + HOLD_MS)
        raise Refusal(
            "new_payout_address_held",
            f"The soul key was rotated less than 24 hours ago: a payout to an address this soul never paid out to needs the "
            f"soul's wallet write proof (X-Agent-ID + X-Agent-Proof) beside the key until {held_until}.",
            status=403,
            details={"to_address": to, "held_until": held_until},
        )


ROUTES = (
    Route(
        method="POST",
        path="/v1/soul/key/rotate",
        name="soul_key_rotate",
        title="Rotate your soul key",
        description="A new soul key, shown this once; the previous key stops working at once. Needs the soul's wallet write proof. "
        "For 24 hours, payouts to an address never paid before also need that proof.",
        handle=rotate,
        auth="write",
        answer_type=KeyRotated,
        tags=TAGS,
        statuses=(401, 404, 429),
    ),
    Route(
        method="DELETE",
        path="/v1/soul/key",
        name="soul_key_revoke",
        title="Revoke your soul key",
        description="No soul key works from now on, until the wallet rotates a new one. Needs the soul's wallet write proof.",
        handle=revoke,
        auth="write",
        answer_type=KeyRevoked,
        tags=TAGS,
        statuses=(401, 404, 429),
    ),
)
