"""`redact`: a text that may quote a secret (an error a provider's health check or a plugin's
import raised) made safe to show: known secret values, credentials in URLs, query
parameter values, bearer tokens and token-shaped strings replaced by `[redacted]`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "[redacted]"
_URL_USER = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@?#]+@")  # scheme://user:password@
_QUERY_VALUE = re.compile(r"([?&;][^\s=&;#?]+=)[^\s&;#\"'<>]+")  # ?key=value, &key=value
_BEARER = re.compile(r"(?i)\b(bearer|token|basic)(\s+|=|:\s*)[A-Za-z0-9._~+/=-]{8,}")
_NAMED = re.compile(r"(?i)\b((?:api[_-]?)?key|secret|password|passwd|token)([\"']?\s*[:=]\s*[\"']?)[^\s\"',;&]{4,}")
_SHAPED = re.compile(
    r"(gh[pousr]_[A-Za-z0-9_]{20,}|github_pat_[A-Za-z0-9_]{20,}|whsec_[A-Za-z0-9_-]{20,}|tw_at_[A-Za-z0-9_-]{20,}"
    r"|sk[-_][A-Za-z0-9_-]{16,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
)
MIN_SECRET = 4  # shorter values are not searched for: they would blank ordinary words
_SECRET_NAME = re.compile(r"(?i)(key|secret|password|passwd|token|credential|dsn)")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without any of `secrets` (the configured values of secret settings) nor
    anything shaped like a credential."""
    for secret in sorted((s for s in secrets if s and len(s) >= MIN_SECRET), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _URL_USER.sub(rf"\1{REDACTED}@", text)
    text = _QUERY_VALUE.sub(rf"\1{REDACTED}", text)
    text = _BEARER.sub(rf"\1\2{REDACTED}", text)
    text = _NAMED.sub(rf"\1\2{REDACTED}", text)
    return _SHAPED.sub(REDACTED, text)


def secret_named_values(env: Mapping[str, str]) -> list[str]:
    """The values of the settings in `env` whose names say they hold a secret (…_API_KEY,
    …_TOKEN, …_PASSWORD): what to hide before a setting's owner has declared it secret."""
    return [value for name, value in env.items() if value and _SECRET_NAME.search(name)]


__all__ = ["REDACTED", "redact", "secret_named_values"]
