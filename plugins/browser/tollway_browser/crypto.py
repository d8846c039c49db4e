"""The plugin's keys: profiles' storage states sealed at rest (NaCl SecretBox: XSalsa20-Poly1305)
and artifact links signed (HMAC-SHA256). Each key is the operator's setting when given, else
32 random bytes generated once into `browser_keys`, shared by every worker on the database."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping

import nacl.exceptions
import nacl.secret

from .settings import STATE_KEY, text
from .tables import BrowserKey

PREFIX = "s1."  # the sealing's version: a later scheme can tell old states apart


async def _generated(name: str) -> bytes:
    query = BrowserKey.select(BrowserKey.value).where(BrowserKey.name == name)
    found = await query.first()
    if found is None:
        made = BrowserKey(name=name, value=base64.b64encode(secrets.token_bytes(32)).decode())
        await BrowserKey.insert(made).on_conflict(target=BrowserKey.name, action="DO NOTHING")
        found = await query.first()
    return base64.b64decode(found["value"])


async def state_key(settings: Mapping[str, str]) -> bytes:
    given = text(settings, STATE_KEY)
    if given:
        try:
            key = base64.b64decode(given, validate=True)
        except binascii.Error:
            key = b""
        if len(key) != 32:
            raise ValueError(f"{STATE_KEY.env_var} must be base64 of 32 bytes")
        return key
    return await _generated("state")


async def link_key() -> bytes:
    return await _generated("links")


def seal(key: bytes, plain: bytes) -> str:
    return PREFIX + base64.b64encode(nacl.secret.SecretBox(key).encrypt(plain)).decode()


def unseal(key: bytes, sealed: str) -> bytes | None:
    """The plain bytes, or None when the state was sealed with another key (or altered)."""
    if not sealed.startswith(PREFIX):
        return None
    try:
        return nacl.secret.SecretBox(key).decrypt(base64.b64decode(sealed[len(PREFIX) :]))
    except (nacl.exceptions.CryptoError, binascii.Error, ValueError):
        return None


def link_signature(key: bytes, artifact_id: str, expires_s: int) -> str:
    mac = hmac.new(key, f"tollway-artifact/v1\n{artifact_id}\n{expires_s}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:20]).rstrip(b"=").decode()


def link_valid(key: bytes, artifact_id: str, expires: str, signature: str, now_s: float) -> bool:
    if not expires.isdigit() or int(expires) < now_s:
        return False
    return hmac.compare_digest(link_signature(key, artifact_id, int(expires)), signature)
