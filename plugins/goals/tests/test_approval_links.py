"""Approval link tokens and pages: round trip, every way a link goes bad, and escaping."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tollway_goals.approval_links import (
    Refusal,
    TokenParts,
    Verdict,
    check_token,
    make_token,
    parse_token,
    read_token,
    shown_hash,
)
from tollway_goals.approval_pages import REFUSALS, approval_page, approved_page, pretty_shown, refusal_page

SECRET = b"s" * 32
ASK = "0b6d5d8e-3f4a-4c1e-9a57-2d1c0e7f8a90"
SHOWN = {"action": "merge", "pull_request": 42, "repository": "acme/web"}
HASH = shown_hash(SHOWN)
NOW = 1_760_000_000
EXPIRES = NOW + 3600
TOKEN = make_token(SECRET, ASK, HASH, EXPIRES)
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~"


def verdict(token: str, *, secret: bytes = SECRET, hash_: str = HASH, now: int = NOW) -> Verdict | None:
    parts = parse_token(token)
    return None if parts is None else check_token(secret, parts, hash_, now)


def swap(text: str, index: int, char: str) -> str:
    return text[:index] + char + text[index + 1 :]


B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def flipped(char: str) -> str:
    """Another base64url digit with the same two low bits, so a MAC's last digit stays canonical."""
    return B64[(B64.index(char) + 4) % 64]


# shown_hash


def test_shown_hash_is_sha256_of_canonical_json():
    assert shown_hash({"repository": "acme/web", "pull_request": 42, "action": "merge"}) == HASH
    assert re.fullmatch(r"[0-9a-f]{64}", HASH)
    assert shown_hash({"a": 1}) != shown_hash({"a": "1"})
    assert shown_hash({"a": 1.0}) == shown_hash({"a": 1})


# tokens


def test_round_trip():
    parts = parse_token(TOKEN)
    assert parts == TokenParts(ask_id=ASK, expires_at_s=EXPIRES, mac=parts.mac)
    assert len(parts.mac) == 32
    assert check_token(SECRET, parts, HASH, NOW) is Verdict.OK
    assert Verdict.OK.refusal is None


def test_token_format_is_url_safe_and_documented():
    ask, expires, mac = TOKEN.split(".")
    assert (ask, expires) == (ASK, str(EXPIRES))
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", mac)


def test_changed_shown_hash_is_altered():
    assert verdict(TOKEN, hash_=shown_hash({**SHOWN, "pull_request": 43})) is Verdict.ALTERED


def test_another_secret_is_altered():
    assert verdict(TOKEN, secret=b"t" * 32) is Verdict.ALTERED


def test_flipped_mac_character_is_altered():
    for index in range(len(TOKEN) - 43, len(TOKEN)):
        assert verdict(swap(TOKEN, index, flipped(TOKEN[index]))) is Verdict.ALTERED


def test_changed_expiry_is_altered():
    ask, _, mac = TOKEN.split(".")
    assert verdict(f"{ask}.{EXPIRES + 86400}.{mac}") is Verdict.ALTERED
    assert verdict(f"{ask}.{EXPIRES - 1}.{mac}") is Verdict.ALTERED


def test_changed_ask_id_is_altered():
    _, expires, mac = TOKEN.split(".")
    assert verdict(f"{uuid.uuid4()}.{expires}.{mac}") is Verdict.ALTERED


def test_expiry():
    assert verdict(TOKEN, now=EXPIRES - 1) is Verdict.OK
    assert verdict(TOKEN, now=EXPIRES) is Verdict.EXPIRED
    assert verdict(TOKEN, now=EXPIRES + 10**6) is Verdict.EXPIRED
    assert Verdict.EXPIRED.refusal is Refusal.EXPIRED


def test_altered_wins_over_expired():
    assert verdict(TOKEN, secret=b"other", now=EXPIRES + 1) is Verdict.ALTERED


def test_non_canonical_spellings_do_not_parse():
    ask, expires, mac = TOKEN.split(".")
    assert parse_token(f"{ask.upper()}.{expires}.{mac}") is None
    assert parse_token(f"{ask}.0{expires}.{mac}") is None
    assert parse_token(f"{ask}.+{expires}.{mac}") is None
    assert parse_token(f"{ask}.{expires}.{mac}=") is None
    assert parse_token(f"{ask.replace('-', '')}.{expires}.{mac}") is None
    assert parse_token(f"{ask}.{expires}.{mac}\n") is None
    assert parse_token(f" {TOKEN}") is None
    last = B64[B64.index(TOKEN[-1]) + 1]
    assert parse_token(swap(TOKEN, len(TOKEN) - 1, last)) is None


MALFORMED = [
    "",
    ".",
    "..",
    "a.b.c",
    "x" * 100_000,
    TOKEN * 2,
    TOKEN + "." + TOKEN,
    TOKEN.rsplit(".", 1)[0],
    TOKEN.split(".", 1)[1],
    TOKEN.replace(".", ""),
    TOKEN.replace(".", "/"),
    TOKEN[:-1],
    TOKEN + "A",
    TOKEN.replace(TOKEN[-5], "é"),
    "é" * 93,
    "\x00" * 93,
    TOKEN.replace("-", "\u2010"),
    TOKEN.split(".")[0] + ".١٢٣." + TOKEN.split(".")[2],
    TOKEN.split(".")[0] + ".1_000." + TOKEN.split(".")[2],
    TOKEN.split(".")[0] + ".-5." + TOKEN.split(".")[2],
    TOKEN.split(".")[0] + "." + "9" * 13 + "." + TOKEN.split(".")[2],
    TOKEN.split(".")[0] + ".." + TOKEN.split(".")[2],
    TOKEN.split(".")[0] + ".1." + TOKEN.split(".")[2][:-1] + "+",
    "\ud800" * 10,
]


@pytest.mark.parametrize("token", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_tokens_are_none(token):
    assert parse_token(token) is None


@pytest.mark.parametrize("token", [None, 5, b"bytes", ["list"], object()])
def test_non_strings_are_none(token):
    assert parse_token(token) is None


@settings(max_examples=400, deadline=None)
@given(index=st.integers(min_value=0, max_value=len(TOKEN) - 1), char=st.sampled_from(ALPHABET + "é\x00 %+/="))
def test_any_single_character_change_is_never_ok(index, char):
    changed = swap(TOKEN, index, char)
    if changed != TOKEN:
        assert verdict(changed) is not Verdict.OK


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(text):
    parts = parse_token(text)
    assert parts is None or verdict(text) is not Verdict.OK


def test_make_token_refuses_what_it_cannot_spell_one_way():
    with pytest.raises(ValueError):
        make_token(SECRET, ASK.upper(), HASH, EXPIRES)
    with pytest.raises(ValueError):
        make_token(SECRET, ASK, HASH.upper(), EXPIRES)
    with pytest.raises(ValueError):
        make_token(SECRET, ASK, HASH, -1)


# read_token: the order a page answers in


def store(*, used: bool = False, known: bool = True) -> dict:
    return {
        "shown_hash_of": lambda ask_id: HASH if known and ask_id == ASK else None,
        "is_used": lambda ask_id: used,
    }


def test_read_token_ok():
    assert read_token(SECRET, TOKEN, now_s=NOW, **store()) == parse_token(TOKEN)


def test_read_token_refusals_and_statuses():
    assert read_token(SECRET, "garbage", now_s=NOW, **store()) is Refusal.ALTERED
    assert read_token(SECRET, TOKEN, now_s=NOW, **store(known=False)) is Refusal.UNKNOWN
    assert read_token(b"other", TOKEN, now_s=NOW, **store(used=True)) is Refusal.ALTERED
    assert read_token(SECRET, TOKEN, now_s=NOW, **store(used=True)) is Refusal.USED
    assert read_token(SECRET, TOKEN, now_s=EXPIRES + 5, **store(used=True)) is Refusal.USED
    assert read_token(SECRET, TOKEN, now_s=EXPIRES + 5, **store()) is Refusal.EXPIRED
    statuses = {r.value: r.status for r in Refusal}
    assert statuses == {"altered": 403, "expired": 410, "used": 410, "unknown": 404}


# pages


def page(shown: object = SHOWN, **overrides: str) -> str:
    args = {
        "person_name": "Ada",
        "question": "May the agent merge this pull request?",
        "shown": shown,
        "shown_hash": shown_hash(shown),
        "action_path": f"/v1/approvals/{TOKEN}",
        "expires_at_iso": "2025-10-09T10:00:00Z",
    }
    return approval_page(**{**args, **overrides})


def test_approval_page_shows_exactly_what_is_approved():
    html = page()
    assert f'<pre id="shown">{pretty_shown(SHOWN)}</pre>' in html.replace("&quot;", '"')
    assert pretty_shown(SHOWN) == json.dumps(SHOWN, indent=2, sort_keys=True, ensure_ascii=False)
    assert HASH in html
    assert "May the agent merge this pull request?" in html
    assert '<meta name="robots" content="noindex">' in html
    assert "<title>" in html and "<script" not in html.lower()


def test_approval_page_form_posts_to_the_link_with_the_shown_hash():
    html = page()
    assert f'<form method="post" action="/v1/approvals/{TOKEN}">' in html
    assert f'<input type="hidden" name="shown_hash" value="{HASH}">' in html
    assert '<button id="approve" type="submit">Approve</button>' in html


def test_agent_controlled_text_is_escaped():
    hostile = {"note": "</pre><script>alert(1)</script>", "q": "\"'&<>"}
    html = page(
        hostile,
        person_name="<b>Eve</b>",
        question="<img src=x onerror=alert(1)>",
        action_path='/v1/approvals/x"><script>',
    )
    assert "<script" not in html.lower()
    assert "<img" not in html and "<b>Eve" not in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;Eve&lt;/b&gt;" in html
    assert 'action="/v1/approvals/x&quot;&gt;&lt;script&gt;"' in html
    assert html.count("<pre") == 1 and html.count("</pre>") == 1


def test_non_ascii_is_shown_as_itself():
    html = page({"name": "Zoë ✓"})
    assert "Zoë ✓" in html


def test_approved_page():
    html = approved_page(who="Ada <ada@example.org>", when_iso="2025-10-09T09:00:00Z", shown_hash=HASH)
    assert 'id="approved"' in html and "Approved by Ada &lt;ada@example.org&gt;" in html
    assert HASH in html and "2025-10-09T09:00:00Z" in html
    assert '<meta name="robots" content="noindex">' in html and "<script" not in html


@pytest.mark.parametrize(
    ("reason", "sentence"),
    [
        ("used", "This link has already been used."),
        ("expired", "This link has expired."),
        ("altered", "This link has been altered or was not issued by this service."),
        ("unknown", "This link does not match any open request"),
    ],
)
def test_refusal_pages(reason, sentence):
    html = refusal_page(reason)
    assert re.search(rf'<p id="reason" data-reason="{reason}">{re.escape(sentence)}', html)
    assert '<meta name="robots" content="noindex">' in html
    assert refusal_page(Refusal(reason)) == html
    assert "<form" not in html and "<script" not in html


def test_every_refusal_has_a_page():
    assert set(REFUSALS) == {r.value for r in Refusal}
    with pytest.raises(ValueError):
        refusal_page("<script>")
