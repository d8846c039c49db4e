"""The goals' operator page (`register_operator_pages`, shown by the console at
/console/view/goals): goals by state with their budget and what they used, the latest goals,
the asks waiting for a person; and one goal: its figures, its case tree, its asks. Figures
are SQL aggregates over the plugin's tables (GROUP BY); nothing secret is read (no webhook
secret, key, connection or approval link), nor the goal's or a case's text (the agent's own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from piccolo.query.functions.aggregate import Count, Sum

from tollway import Figure, Link, OperatorPage, Platform, Report, Row, Section, Table, usdc

from .ending import OPEN_ASKS
from .ids import iso, now_ms
from .tables import Ask, Case, Goal

LATEST = 50  # goals listed, newest first
WAITING = 50  # asks waiting for a person listed, oldest first
MAX_CASES = 500  # cases drawn in one goal's tree
NAME = "goals"  # the page: /console/view/goals


def age(ms: int) -> str:
    """A duration in milliseconds as a person reads it: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`."""
    s = max(ms, 0) // 1000
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


async def _by_state() -> Section:
    rows = await (
        Goal.select(
            Goal.status,
            Count(alias="goals"),
            Sum(Goal.budget, alias="budget"),
            Sum(Goal.spent, alias="spent"),
            Sum(Goal.held, alias="held"),
        )
        .group_by(Goal.status)
        .order_by(Goal.status)
    )
    return Section(
        "Goals by state",
        table=Table(
            ("State", "Goals", "Budget (USDC)", "Used (USDC)", "Held (USDC)"),
            tuple(
                Row((r["status"], int(r["goals"]), *(usdc(int(r[k] or 0)) for k in ("budget", "spent", "held"))))
                for r in rows
            ),
            "No goal yet.",
        ),
        note="Used is what the goals' steps were charged; held is set aside for steps running and cases' slices.",
    )


async def _counts_by_goal(goal_ids: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """(cases, asks waiting) of each goal, each one GROUP BY."""
    if not goal_ids:
        return {}, {}
    cases = await Case.select(Case.goal_id, Count(alias="n")).where(Case.goal_id.is_in(goal_ids)).group_by(Case.goal_id)
    asks = await (
        Ask.select(Ask.goal_id, Count(alias="n"))
        .where(Ask.goal_id.is_in(goal_ids), Ask.status.is_in(list(OPEN_ASKS)))
        .group_by(Ask.goal_id)
    )
    return {r["goal_id"]: int(r["n"]) for r in cases}, {r["goal_id"]: int(r["n"]) for r in asks}


async def _latest() -> Section:
    goals = await (
        Goal.select(Goal.id, Goal.agent_id, Goal.status, Goal.budget, Goal.spent, Goal.held, Goal.created_ms)
        .order_by(Goal.seq, ascending=False)
        .limit(LATEST)
    )
    cases, asks = await _counts_by_goal([g["id"] for g in goals])
    rows = tuple(
        Row(
            (
                Link.item(NAME, g["id"]),
                Link.agent(g["agent_id"]),
                g["status"],
                usdc(int(g["budget"])),
                usdc(int(g["spent"])),
                usdc(int(g["held"])),
                cases.get(g["id"], 0),
                asks.get(g["id"], 0),
                iso(int(g["created_ms"])),
            )
        )
        for g in goals
    )
    columns = (
        "Goal",
        "Agent",
        "State",
        "Budget (USDC)",
        "Used (USDC)",
        "Held (USDC)",
        "Cases",
        "Asks waiting",
        "Created",
    )
    return Section(f"The latest {LATEST} goals", table=Table(columns, rows, "No goal yet."))


_ASK_COLUMNS = (
    Ask.id,
    Ask.goal_id,
    Ask.case_id,
    Ask.kind,
    Ask.status,
    Ask.person_name,
    Ask.chases,
    Ask.deadline_ms,
    Ask.created_ms,
)


async def _case_keys(case_ids: list[str]) -> dict[str, str]:
    if not case_ids:
        return {}
    found = await Case.select(Case.id, Case.case_key).where(Case.id.is_in(case_ids))
    return {r["id"]: r["case_key"] for r in found}


def _ask_row(a: Mapping[str, Any], keys: Mapping[str, str], now: int, *, with_goal: bool) -> Row:
    cells = (
        *((Link.item(NAME, a["goal_id"]),) if with_goal else ()),
        keys.get(a["case_id"], a["case_id"]),
        a["kind"],
        a["status"],
        a["person_name"],
        age(now - int(a["created_ms"])),
        int(a["chases"]),
        iso(int(a["deadline_ms"])),
    )
    return Row(cells)


async def _waiting(now: int) -> Section:
    asks = await (
        Ask.select(*_ASK_COLUMNS)
        .where(Ask.status.is_in(list(OPEN_ASKS)))
        .order_by(Ask.created_ms)
        .order_by(Ask.id)
        .limit(WAITING)
    )
    keys = await _case_keys(list({a["case_id"] for a in asks}))
    columns = ("Goal", "Case", "Kind", "State", "Person", "Waiting for", "Reminders", "Deadline")
    return Section(
        "Asks waiting for a person",
        table=Table(columns, tuple(_ask_row(a, keys, now, with_goal=True) for a in asks), "No ask is waiting."),
        note=f"The oldest {WAITING} questions sent to a person and not yet answered (sending, sent or chased).",
    )


def _tree(cases: list[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int]]:
    """The cases in tree order (each after its parent, siblings as opened), with their level."""
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    ids = {c["id"] for c in cases}
    for c in cases:  # a case whose parent is not listed is drawn at the top
        children.setdefault(c["parent_id"] if c["parent_id"] in ids else None, []).append(c)
    out: list[tuple[Mapping[str, Any], int]] = []
    stack = [(c, 0) for c in reversed(children.get(None, []))]
    while stack:
        case, level = stack.pop()
        out.append((case, level))
        stack += [(c, level + 1) for c in reversed(children.get(case["id"], []))]
    return out


async def _goal(goal_id: str) -> Report | None:
    goal = await (
        Goal.select(
            Goal.id, Goal.agent_id, Goal.status, Goal.budget, Goal.spent, Goal.held, Goal.created_ms, Goal.ended_ms
        )
        .where(Goal.id == goal_id)
        .first()
    )
    if goal is None:
        return None
    cases = await (
        Case.select(
            Case.id,
            Case.case_key,
            Case.state,
            Case.parent_id,
            Case.budget,
            Case.spent,
            Case.held,
            Case.steps,
            Case.opened_ms,
        )
        .where(Case.goal_id == goal_id)
        .order_by(Case.opened_ms)
        .order_by(Case.id)
        .limit(MAX_CASES + 1)
    )
    asks = await Ask.select(*_ASK_COLUMNS).where(Ask.goal_id == goal_id).order_by(Ask.created_ms).order_by(Ask.id)
    now, budget, spent, held = now_ms(), int(goal["budget"]), int(goal["spent"]), int(goal["held"])
    figures = (
        Figure("State", goal["status"]),
        Figure("Agent", Link.agent(goal["agent_id"])),
        Figure("Budget (USDC)", usdc(budget)),
        Figure("Used (USDC)", usdc(spent)),
        Figure("Held (USDC)", usdc(held)),
        Figure("Left (USDC)", usdc(budget - spent - held)),
        Figure("Cases", len(cases[:MAX_CASES])),
        Figure("Asks waiting", sum(1 for a in asks if a["status"] in OPEN_ASKS)),
        Figure("Created", iso(int(goal["created_ms"]))),
        Figure("Ended", iso(int(goal["ended_ms"])) if goal["ended_ms"] is not None else None),
    )
    tree = tuple(
        Row(
            (
                c["case_key"],
                c["state"],
                usdc(int(c["budget"])) if c["budget"] is not None else "from the goal",
                usdc(int(c["spent"])),
                usdc(int(c["held"])),
                int(c["steps"]),
                iso(int(c["opened_ms"])),
            ),
            level,
        )
        for c, level in _tree(cases[:MAX_CASES])
    )
    keys = {c["id"]: c["case_key"] for c in cases}
    columns = ("Case", "State", "Budget (USDC)", "Used (USDC)", "Held (USDC)", "Steps", "Opened")
    return Report(
        f"Goal {goal_id}",
        (
            Section("The goal", figures),
            Section(
                "Cases",
                table=Table(columns, tree, "No case yet."),
                note=f"Only the first {MAX_CASES} cases are drawn." if len(cases) > MAX_CASES else None,
            ),
            Section(
                "Asks",
                table=Table(
                    ("Case", "Kind", "State", "Person", "Age", "Reminders", "Deadline"),
                    tuple(_ask_row(a, keys, now, with_goal=False) for a in asks),
                    "No ask yet.",
                ),
            ),
        ),
    )


async def load(platform: Platform, query: Mapping[str, str], item: str | None) -> Report | None:
    if item is not None:
        return await _goal(item)
    return Report("Goals", (await _by_state(), await _latest(), await _waiting(now_ms())))


OPERATOR_PAGE = OperatorPage(
    name=NAME, title="Goals", load=load, description="Goals with their budget used, case trees and asks."
)
