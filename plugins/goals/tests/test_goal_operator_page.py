"""The goals' operator page (the console's Goals) on SQLite and PostgreSQL, seeded through the
service: two goals paid from credits (one cancelled), a case whose session opens a sub-case
and asks a person by email (a real SMTP server), run by the session runner. The report's
figures are the goals' own (as GET /v1/compute/{id} answers them), the case tree nests the
sub-case under its parent, the waiting ask is listed with its age, and no secret or text of
the agent's is in it."""

from __future__ import annotations

from typing import Any

import msgspec
from chat_standin import ask_lee, call, case_event, chat_standin, turn
from goal_support import event, mail_kernel, new_goal

from tollway import Link, Report
from tollway.testing import http_client, smtp_server
from tollway_goals.runner import SessionRunner

GOAL_TEXT = "Keep every parcel of the private-goal-text on time."
TASK = "Find where the parcel goes (private-case-task)"


def opener(request: dict[str, Any]) -> dict[str, Any]:
    """A case's first event: open a sub-case with a slice of 1 USDC and ask Lee; else wait."""
    if case_event(request):
        sub = call("open_case", "c1", case_key="parcel-address", task="Check the address", budget_usdc="1")
        return turn(None, sub, ask_lee(chase_after_seconds=600))
    return turn("Noted." if "You run the goal's root" in request["messages"][0]["content"] else "Waiting.")


def section(report: Report, heading: str):
    return next(s for s in report.sections if s.heading == heading)


def cells(section_) -> list[tuple[Any, ...]]:
    return [tuple(c.text if isinstance(c, Link) else c for c in row.cells) for row in section_.table.rows]


async def test_the_goals_page_reports_budgets_case_trees_and_waiting_asks(kernel_factory) -> None:
    with chat_standin(opener) as chat, smtp_server() as (mail, mail_env):
        kernel = await mail_kernel(kernel_factory, chat.env, mail_env)
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            agent, headers, first = await new_goal(client, params={"budget_usdc": "20"}, goal=GOAL_TEXT)
            gid = first["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="parcel", task=TASK, budget_usdc="3")
            await runner.run_until_idle()
            _other, other_headers, second = await new_goal(client, params={"budget_usdc": "6"})
            cancelled = await client.post(f"/v1/compute/{second['goal_id']}/cancel", headers=other_headers)
            assert cancelled.status_code == 200, cancelled.text
            shown = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            ended = (await client.get(f"/v1/compute/{second['goal_id']}", headers=other_headers)).json()["data"]
            secret = (await client.get(f"/v1/compute/{gid}/result-webhook", headers=headers)).json()["data"]["secret"]
            [page] = [p for p in kernel.platform.operator_pages() if p.name == "goals"]
            listing = await page.load(kernel.platform, {}, None)
            one = await page.load(kernel.platform, {}, gid)
            missing = await page.load(kernel.platform, {}, "goal_nothing")
    assert mail.messages and mail.messages[0]["Subject"] == "A question for you"
    assert page.title == "Goals" and missing is None
    assert shown["status"] == "running" and ended["status"] == "cancelled"
    assert shown["spent_usdc"] != "0.000000"  # the model's turns were charged

    by_state = {row[0]: row[1:] for row in cells(section(listing, "Goals by state"))}
    assert by_state == {
        "cancelled": (1, "6.000000", ended["spent_usdc"], ended["held_usdc"]),
        "running": (1, "20.000000", shown["spent_usdc"], shown["held_usdc"]),
    }
    latest = cells(section(listing, "The latest 50 goals"))
    assert [row[0] for row in latest] == [second["goal_id"], gid]  # newest first
    assert latest[1][1:8] == (agent, "running", "20.000000", shown["spent_usdc"], shown["held_usdc"], 2, 1)
    assert latest[0][6:8] == (0, 0)
    goal_link = section(listing, "The latest 50 goals").table.rows[1].cells[0]
    assert goal_link == Link(gid, f"/console/view/goals/{gid}")
    [waiting] = cells(section(listing, "Asks waiting for a person"))
    assert waiting[:5] == (gid, "parcel", "answer", "sent", "Lee") and waiting[5].endswith(" s")

    assert one is not None and one.title == f"Goal {gid}"
    figures = {f.label: f.value for f in section(one, "The goal").figures}
    assert figures["Budget (USDC)"] == "20.000000" and figures["Used (USDC)"] == shown["spent_usdc"]
    assert figures["Held (USDC)"] == shown["held_usdc"] and figures["Cases"] == 2 and figures["Asks waiting"] == 1
    tree = section(one, "Cases").table.rows
    assert [(r.cells[0], r.level) for r in tree] == [("parcel", 0), ("parcel-address", 1)]
    assert tree[0].cells[2] == "3.000000" and tree[1].cells[2] == "1.000000"  # the slices given
    [ask] = cells(section(one, "Asks"))
    assert ask[:4] == ("parcel", "answer", "sent", "Lee")

    text = msgspec.json.encode([listing, one]).decode()
    for private in (secret, "private-goal-text", "private-case-task", "lee@example.com", "Which address"):
        assert private not in text
