"""The approval link's HTML pages: what is approved, the confirmation and the refusals, all without script."""

from __future__ import annotations

import json
from html import escape

__all__ = ["REFUSALS", "approval_page", "approved_page", "pretty_shown", "refusal_page"]

REFUSALS: dict[str, tuple[str, str]] = {
    "used": (
        "Link already used",
        "This link has already been used. Each approval link works once, so nothing more is needed from you.",
    ),
    "expired": (
        "Link expired",
        "This link has expired. Nothing was approved; ask the sender for a new link if it is still needed.",
    ),
    "altered": (
        "Link not valid",
        "This link has been altered or was not issued by this service. Nothing was approved.",
    ),
    "unknown": (
        "Request not found",
        "This link does not match any open request; it may have been withdrawn. Nothing was approved.",
    ),
}

_STYLE = """
body{margin:0;background:#f4f5f7;color:#1d2330;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:44rem;margin:2.5rem auto;padding:2rem 2.25rem;background:#fff;border:1px solid #dde1e8;border-radius:10px}
h1{margin:0 0 1rem;font-size:1.4rem}
p{margin:.5rem 0}
.question{font-size:1.1rem;font-weight:600;white-space:pre-wrap}
.label{margin-top:1.25rem;color:#4a5263;font-size:.9rem}
pre{margin:.25rem 0 0;padding:1rem;overflow:auto;background:#f7f8fa;border:1px solid #dde1e8;border-radius:6px;
font:14px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
.small{color:#5d6677;font-size:.8rem;overflow-wrap:anywhere}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
form{margin-top:1.5rem}
button{padding:.6rem 1.6rem;font:inherit;font-weight:600;color:#fff;background:#1f6f43;border:0;border-radius:6px;cursor:pointer}
button:hover,button:focus{background:#175535}
.ok{color:#1f6f43}
.refused{color:#9b2c1f}
""".strip()

_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"


def pretty_shown(shown: object) -> str:
    """What is approved, as the page shows it: indented JSON with sorted keys."""
    return json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False)


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="robots" content="noindex">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        f"<title>{escape(title)} · Tollway</title>\n"
        f"<style>\n{_STYLE}\n</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def approval_page(
    *,
    person_name: str,
    question: str,
    shown: object,
    shown_hash: str,
    action_path: str,
    expires_at_iso: str,
) -> str:
    """The page behind a valid link: the question, exactly what is approved, and the button."""
    body = (
        "<h1>Approval requested</h1>\n"
        f"<p>Hello {escape(person_name)},</p>\n"
        f'<p class="question" id="question">{escape(question)}</p>\n'
        '<p class="label">Exactly what you approve:</p>\n'
        f'<pre id="shown">{escape(pretty_shown(shown))}</pre>\n'
        f'<p class="small">SHA-256 of this content: <code id="shown-hash">{escape(shown_hash)}</code></p>\n'
        f'<form method="post" action="{escape(action_path)}">\n'
        f'<input type="hidden" name="shown_hash" value="{escape(shown_hash)}">\n'
        '<button id="approve" type="submit">Approve</button>\n'
        "</form>\n"
        f'<p class="small">This link works once and expires at <time>{escape(expires_at_iso)}</time>. '
        "If you do not approve, close this page; nothing happens.</p>"
    )
    return _page("Approval requested", body)


def approved_page(*, who: str, when_iso: str, shown_hash: str) -> str:
    """The confirmation after the click."""
    body = (
        '<h1 class="ok">Approved</h1>\n'
        f'<p id="approved">Approved by {escape(who)} at <time>{escape(when_iso)}</time>. '
        "Thank you; you can close this page.</p>\n"
        f'<p class="small">SHA-256 of what was approved: <code id="shown-hash">{escape(shown_hash)}</code></p>'
    )
    return _page("Approved", body)


def refusal_page(reason: str) -> str:
    """The page for a link that is not honoured; `reason` is one of REFUSALS' keys."""
    key = str(reason)
    if key not in REFUSALS:
        raise ValueError(f"unknown refusal reason: {key!r}")
    heading, sentence = REFUSALS[key]
    body = (
        f'<h1 class="refused">{escape(heading)}</h1>\n<p id="reason" data-reason="{escape(key)}">{escape(sentence)}</p>'
    )
    return _page(heading, body)
