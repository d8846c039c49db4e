"""`redact`: what an error text (a provider's health check, a plugin's import) keeps of a
secret before the operator console shows it: nothing."""

from __future__ import annotations

import pytest

from tollway._core.basics.redaction import REDACTED, redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Server error '503' for url 'https://api.example/v1/search?q=cats&api_key=k-51f0a9'", "k-51f0a9"),
        ("ConnectError: postgres://tollway:pw-8c1e77@db.internal:5432/tollway", "pw-8c1e77"),
        ("401 for Authorization: Bearer abcdef0123456789", "abcdef0123456789"),
        ("upstream said: api_key=zz-90a1b2c3 is not valid", "zz-90a1b2c3"),
        (
            "refused token tw_at_Q2xvdWRzIGFyZSBub3QgYSBzZWNyZXQgYXQgYWxs",
            "tw_at_Q2xvdWRzIGFyZSBub3QgYSBzZWNyZXQgYXQgYWxs",
        ),
        ("the provider answered: your key sk-live-0123456789abcdef is revoked", "sk-live-0123456789abcdef"),
    ],
)
def test_credentials_in_error_texts_are_redacted(text: str, secret: str) -> None:
    shown = redact(text)
    assert secret not in shown and REDACTED in shown


def test_a_configured_secret_is_redacted_wherever_it_appears_and_plain_words_stay() -> None:
    text = "SearXNG could not be reached at searx.example: quota of plan-x7-Secret exceeded (503)"
    shown = redact(text, ["plan-x7-Secret", "", "ab"])  # blank and too short values are not searched for
    assert shown == "SearXNG could not be reached at searx.example: quota of [redacted] exceeded (503)"
