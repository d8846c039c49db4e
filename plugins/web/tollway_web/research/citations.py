"""Citations `[n]` in a written report: found, checked against the sources read, cleaned."""

from __future__ import annotations

import re

# "[3]", "[1, 4]", "[2,5,7]"; not a Markdown link's "[text](url)".
CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\](?!\()")


def cited(text: str) -> list[int]:
    """Every source number cited in `text`, in order, repeats kept."""
    return [int(n) for group in CITATION.findall(text) for n in re.split(r"\s*[,;]\s*", group)]


def check(text: str, valid: set[int]) -> tuple[str, int, int]:
    """`text` with citations to numbers outside `valid` removed.

    Returns (the cleaned text, how many citations were removed, how many valid ones remain).
    A group keeps its valid numbers ("[2, 9]" with 9 unknown becomes "[2]"); a group with
    none left disappears with the space before it.
    """
    removed = 0
    kept = 0

    def fix(match: re.Match[str]) -> str:
        nonlocal removed, kept
        numbers = [int(n) for n in re.split(r"\s*[,;]\s*", match.group(1))]
        good = [n for n in numbers if n in valid]
        removed += len(numbers) - len(good)
        kept += len(good)
        return f"[{', '.join(str(n) for n in good)}]" if good else ""

    cleaned = CITATION.sub(fix, text)
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)  # the space a removed citation left
    cleaned = re.sub(r"[ \t]{2,}", " ", cleaned)
    return cleaned, removed, kept
