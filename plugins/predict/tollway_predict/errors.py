"""Refusals before payment, shared by both models."""

from __future__ import annotations


class InputProblem(Exception):
    """400 `invalid_input` with a `code`, a `message` and the field path (and, for
    expressions, the character position of the error)."""

    def __init__(self, code: str, message: str, field: str, position: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.position = position
