"""The checks of a task's input msgspec cannot make: its URLs are http(s) pages, and each
step has what its action needs (one Struct serves every action, to keep the schema small).
Applied before payment, and to each step the goal loop's model asks for."""

from __future__ import annotations

from urllib.parse import urlsplit

from tollway import FieldError

from . import wire

WEB_SCHEMES = ("http", "https")


def web_url(field: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() not in WEB_SCHEMES or not parts.hostname:
        raise FieldError(field, "Expected an absolute http:// or https:// URL")
    if any(ch <= " " or ch == "\x7f" for ch in url):
        raise FieldError(field, "Expected a URL without spaces or control characters")


TARGETED = ("click", "fill", "select")  # these need an element; the others may name one


def step_problem(n: int, step: wire.BrowserStep) -> FieldError | None:
    """What a step lacks for its action (msgspec cannot say it: one Struct serves every action)."""
    field = f"steps[{n}]"
    if step.action == "goto":
        if step.url is None:
            return FieldError(f"{field}.url", "goto needs a url")
        try:
            web_url(f"{field}.url", step.url)
        except FieldError as problem:
            return problem
    if step.action in TARGETED and not (step.role or step.label or step.text or step.selector):
        return FieldError(field, f"{step.action} needs an element: role (and name), label, text or selector")
    if step.action in ("fill", "select") and step.value is None:
        return FieldError(f"{field}.value", f"{step.action} needs a value")
    if step.action == "press" and not step.key:
        return FieldError(f"{field}.key", "press needs a key")
    if step.action == "extract" and step.what == "attribute" and not step.attribute:
        return FieldError(f"{field}.attribute", "extract of an attribute names it")
    return None
