"""The diff engine: two consecutive recorded values of an entity become Change rows.

A change of one leaf is reported at its path: dotted for object keys, indexed for
list items (`recalls[2].remedy`; a key that is not a plain name is quoted,
`aliases["a.b"]`). An object whose keys differ, or a list whose length differs,
changed as a whole at its path. Several leaves changing at once are one row at `$`
with the whole earlier and later values. Key order never makes a change, and equal
numbers are equal whatever their spelling (1 and 1.0). `apply_changes` is the
inverse: applying a value's rows to `before` gives `after`.
"""

from __future__ import annotations

import json
import re
from typing import Any

ROOT = "$"
ENTITY = "$entity"
LISTED, NOT_LISTED = "listed", "not_listed"
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_STEP = re.compile(r'\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def _same(before: Any, after: Any) -> bool:
    """JSON equality: numbers by value (never a boolean equal to a number), objects
    regardless of key order."""
    if isinstance(before, bool) or isinstance(after, bool):
        return type(before) is type(after) and before == after
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return before == after
    if isinstance(before, dict) and isinstance(after, dict):
        return before.keys() == after.keys() and all(_same(before[k], after[k]) for k in before)
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(_same(b, a) for b, a in zip(before, after))
    return type(before) is type(after) and before == after


def _key_step(key: str) -> str:
    return f".{key}" if _PLAIN.match(key) else f"[{json.dumps(key)}]"


def _leaves(path: str, before: Any, after: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(before, dict) and isinstance(after, dict) and before.keys() == after.keys():
        for key in sorted(before):
            _leaves(path + _key_step(key), before[key], after[key], out)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after)):
            _leaves(f"{path}[{i}]", b, a, out)
    elif not _same(before, after):
        out.append((path, before, after))


def leaf_changes(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """Every changed leaf as (path, before, after); paths start at the value's root
    (`total`, `recalls[2].remedy`), the root itself is `$`."""
    out: list[tuple[str, Any, Any]] = []
    _leaves("", before, after, out)
    return [((p[1:] if p.startswith(".") else p) or ROOT, b, a) for p, b, a in out]


def diff(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """The Change rows' (field, before, after) for one new value: none when the values
    are equal, one row at the leaf's path when one leaf changed, else one `$` row."""
    leaves = leaf_changes(before, after)
    if len(leaves) <= 1:
        return leaves
    return [(ROOT, before, after)]


def entity_change(listed_now: bool) -> tuple[str, str, str]:
    """The `$entity` row of an entity that appears again (listed) or stops being listed."""
    return (ENTITY, NOT_LISTED, LISTED) if listed_now else (ENTITY, LISTED, NOT_LISTED)


def _steps(path: str) -> list[str | int]:
    if path == ROOT:
        return []
    text = path if path.startswith("[") else "." + path
    steps: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None:
            raise ValueError(f"not a change path: {path!r}")
        plain, index, quoted = m.groups()
        steps.append(plain if plain is not None else int(index) if index is not None else json.loads(quoted))
        pos = m.end()
    return steps


def apply_changes(before: Any, rows: list[tuple[str, Any, Any]]) -> Any:
    """`before` with each row's `after` written at its `field` (a new value, the
    input left alone): the inverse of `diff`."""
    value = json.loads(json.dumps(before))
    for field, _old, new in rows:
        steps = _steps(field)
        if not steps:
            value = json.loads(json.dumps(new))
            continue
        target = value
        for step in steps[:-1]:
            target = target[step]
        target[steps[-1]] = json.loads(json.dumps(new))
    return value
