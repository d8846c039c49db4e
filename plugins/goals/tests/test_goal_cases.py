"""Compute goals over HTTP on SQLite and PostgreSQL: a goal paid from its budget, events
that open, wake and reopen cases (once per event_id), the cases listing and record, the
done check, and that only the goal's creator sees any of it."""

from __future__ import annotations

import pytest
from goal_support import event, goals_kernel, new_goal

from tollway.testing import credits_session, http_client


async def test_a_goal_costs_its_budget_and_its_receipt_names_it(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        agent_id, headers, accepted = await new_goal(client, credits="20", params={"budget_usdc": "12.50"})
        assert accepted["tool"] == "compute" and accepted["status"] == "pending"
        assert accepted["goal_id"] == "goal_" + accepted["request_id"].split("_", 1)[1]
        balance = (await client.get("/v1/balance", headers=headers)).json()
        receipt = (await client.get(f"/v1/receipts/{accepted['receipt_id']}", headers=headers)).json()
        goal = (await client.get(f"/v1/compute/{accepted['goal_id']}", headers=headers)).json()["data"]
    assert (
        balance["data"]["credits_balance"] == "7.500000"
        if "data" in balance
        else balance["credits_balance"] == "7.500000"
    )
    body = receipt.get("data", receipt)
    body = body.get("receipt", body)
    assert body["goal_id"] == accepted["goal_id"] and body["amount_usdc"] == "12.500000"
    assert goal["status"] == "running" and goal["budget_usdc"] == "12.500000" and goal["spent_usdc"] == "0.000000"


@pytest.mark.parametrize(
    ("params", "fields"),
    [({"budget_usdc": "4.99"}, {"params.budget_usdc"}),
     ({"budget_usdc": "100000"}, {"params.budget_usdc"}),
     ({"one_off": False, "done_check": {"kind": "cases", "finished_states": ["paid"]}}, {"params.done_check"}),
     ({"result_webhook_url": "ftp://example.com/x", "budget_usdc": "1"}, {"params.result_webhook_url", "params.budget_usdc"}),
     ({"agent_limits": {"max_depth": 0}}, {"params.agent_limits.max_depth"})],
)  # fmt: skip
async def test_bad_goals_are_refused_before_payment(kernel_factory, params, fields) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client, "50")
        resp = await client.post("/v1/compute", json={"goal": "x", "params": params}, headers=headers)
        balance = (await client.get("/v1/balance", headers=headers)).json()
    assert resp.status_code == 400, resp.text
    assert {d["field"] for d in resp.json()["details"]} == fields
    assert "50.000000" in str(balance)


async def test_events_open_wake_and_reopen_cases_once_per_event_id(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(
            client, params={"budget_usdc": "20", "done_check": {"kind": "cases", "finished_states": ["paid"]}}
        )
        gid = goal["goal_id"]
        first = await event(
            client, gid, headers, event_id="e1", case_key="inv-1", task="Chase invoice 1", budget_usdc="2", step_limit=5
        )
        again = await event(client, gid, headers, event_id="e1", case_key="inv-1", task="Chase invoice 1")
        wake = await event(client, gid, headers, event_id="e2", case_key="inv-1", task="The customer wrote back")
        root = await event(client, gid, headers, event_id="e3", task="A note for the whole goal")
        assert [r.status_code for r in (first, again, wake, root)] == [202] * 4
        assert first.json() == {"target": "case", "case_key": "inv-1", "outcome": "created"}
        assert again.json() == first.json()
        assert wake.json()["outcome"] == "already_open"
        assert root.json() == {"target": "root", "case_key": None, "outcome": "sent_to_root"}
        from tollway import storage

        await storage.rows("UPDATE goals_cases SET state = 'paid' WHERE case_key = 'inv-1'")
        reopened = await event(client, gid, headers, event_id="e4", case_key="inv-1", task="Paid twice?")
        record = (await client.get(f"/v1/compute/{gid}/cases/inv-1", headers=headers)).json()["data"]
        events = await storage.rows("SELECT COUNT(*) AS n FROM goals_events WHERE goal_id = {}", gid)
    assert reopened.json()["outcome"] == "reopened"
    assert record["state"] == "reopened" and record["budget_usdc"] == "2.000000" and record["step_limit"] == 5
    # the task is the one the case was opened with: later events go to its session, not over it
    assert (
        record["task"] == "Chase invoice 1"
        and record["depth"] == 1
        and record["decisions"] == []
        and record["asks"] == []
        and record["deliveries"] == []
    )
    assert int(events[0]["n"]) == 4


async def test_a_case_budget_beyond_what_the_goal_has_left_is_refused(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client, params={"budget_usdc": "6"})
        ok = await event(client, goal["goal_id"], headers, event_id="a", case_key="a", task="t", budget_usdc="5.5")
        over = await event(
            client, goal["goal_id"], headers, event_id="b", case_key="b", task="t", budget_usdc="0.500001"
        )
        state = (await client.get(f"/v1/compute/{goal['goal_id']}", headers=headers)).json()["data"]
    assert ok.status_code == 202
    assert over.status_code == 409 and over.json()["error"] == "insufficient_budget"
    assert state["held_usdc"] == "5.500000"


async def test_the_cases_listing_orders_filters_pages_and_counts(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client)
        gid = goal["goal_id"]
        for i in range(5):
            assert (
                await event(client, gid, headers, event_id=f"e{i}", case_key=f"c{i}", task=f"case {i}")
            ).status_code == 202
        from tollway import storage

        await storage.rows("UPDATE goals_cases SET state = 'blocked' WHERE case_key IN ('c1', 'c3')")
        everything = (await client.get(f"/v1/compute/{gid}/cases", headers=headers)).json()
        blocked = (
            await client.get(f"/v1/compute/{gid}/cases?state=blocked,done&limit=1&offset=1", headers=headers)
        ).json()
        bad = await client.get(f"/v1/compute/{gid}/cases?limit=201&offset=-1&state=Bad", headers=headers)
        zero = await client.get(f"/v1/compute/{gid}/cases?limit=0", headers=headers)
    assert [c["key"] for c in everything["data"]] == ["c0", "c1", "c2", "c3", "c4"]
    assert everything["page"] == {"total": 5, "limit": 50, "offset": 0}
    assert everything["counts"] == {"open": 3, "blocked": 2}
    assert [c["key"] for c in blocked["data"]] == ["c3"] and blocked["page"] == {"total": 2, "limit": 1, "offset": 1}
    assert blocked["counts"] == {"open": 3, "blocked": 2}
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} == {"limit", "offset", "state"}
    assert zero.status_code == 400
    case = everything["data"][0]
    assert set(case) == {
        "key",
        "state",
        "owner",
        "next_action",
        "due_date",
        "evidence",
        "status",
        "task",
        "session_id",
        "parent_id",
        "depth",
        "budget_usdc",
        "held_usdc",
        "step_limit",
        "opened_at",
        "updated_at",
        "ended_at",
        "age_seconds",
    }
    assert case["status"] == "pending" and case["held_usdc"] == "0.000000" and case["budget_usdc"] is None


async def test_only_the_goals_creator_reads_or_writes_it(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client)
        gid = goal["goal_id"]
        assert (await event(client, gid, headers, event_id="e", case_key="k", task="t")).status_code == 202
        _other, other = await credits_session(client, "1")
        reads = [
            await client.get(path, headers=other)
            for path in (
                f"/v1/compute/{gid}",
                f"/v1/compute/{gid}/cases",
                f"/v1/compute/{gid}/cases/k",
                f"/v1/compute/{gid}/result-webhook",
            )
        ]
        write = await event(client, gid, other, event_id="x", case_key="k2", task="t")
        nobody = await client.get(f"/v1/compute/{gid}/cases")
        missing = await client.get("/v1/compute/goal_nothing/cases", headers=headers)
        unknown_case = await client.get(f"/v1/compute/{gid}/cases/nope", headers=headers)
        secret = await client.get(f"/v1/compute/{gid}/result-webhook", headers=headers)
        bare = await client.get(f"/v1/compute/{gid}/result-webhook", headers={"X-Agent-ID": _agent})
    assert [r.status_code for r in reads] == [404] * 4 and write.status_code == 404
    assert nobody.status_code == 401 and missing.status_code == 404 and unknown_case.status_code == 404
    assert secret.status_code == 200 and secret.json()["data"]["secret"].startswith("whsec_")
    assert bare.status_code == 401


async def test_the_done_check_needs_cases_and_each_in_a_finished_state(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    from tollway import storage

    check = {
        "kind": "cases",
        "finished_states": ["paid", "written_off"],
        "owner_required_for": ["written_off"],
        "min_cases": 2,
    }
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client, params={"done_check": check})
        gid = goal["goal_id"]

        async def met() -> bool:
            return (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]["done_check"]["met"]

        shown = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]["done_check"]
        assert {k: shown[k] for k in check} == check  # every field as given, owner_required_for and min_cases too
        assert not await met()  # no cases
        await event(client, gid, headers, event_id="1", case_key="a", task="t")
        await storage.rows("UPDATE goals_cases SET state = 'paid' WHERE case_key = 'a'")
        assert not await met()  # one case, two needed
        await event(client, gid, headers, event_id="2", case_key="b", task="t")
        await storage.rows("UPDATE goals_cases SET state = 'written_off' WHERE case_key = 'b'")
        assert not await met()  # written_off counts only with an owner
        await storage.rows("UPDATE goals_cases SET owner = 'Dana' WHERE case_key = 'b'")
        assert await met()


async def test_a_goal_that_is_not_one_off_sends_every_event_to_its_root(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client, params={"one_off": False})
        resp = await event(client, goal["goal_id"], headers, event_id="1", case_key="a", task="t")
        listing = (await client.get(f"/v1/compute/{goal['goal_id']}/cases", headers=headers)).json()
    assert resp.json()["outcome"] == "sent_to_root" and listing["data"] == [] and listing["page"]["total"] == 0


async def test_the_done_check_shows_its_defaults_when_left_out(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(
            client, params={"done_check": {"kind": "cases", "finished_states": ["paid"]}}
        )
        shown = (await client.get(f"/v1/compute/{goal['goal_id']}", headers=headers)).json()["data"]["done_check"]
    assert shown["owner_required_for"] == [] and shown["min_cases"] == 1 and shown["met"] is False


async def test_a_case_shows_the_slice_last_given_after_it_ends(kernel_factory) -> None:
    from tollway import storage
    from tollway_goals import budget

    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client, params={"budget_usdc": "10"})
        gid = goal["goal_id"]
        await event(client, gid, headers, event_id="1", case_key="k", task="Chase it", budget_usdc="2")
        case = await storage.row("SELECT id FROM goals_cases WHERE case_key = 'k'")
        async with storage.transaction():  # one step of 0.5 spent, then the case ends: 1.5 goes back to the goal
            assert await budget.hold_step(gid, case["id"], 500_000, counts_step=True) is None
            await budget.charge_step(gid, case["id"], 500_000, 500_000)
            await storage.rows("UPDATE goals_cases SET state = 'done' WHERE id = {}", case["id"])
            await budget.release_slice(gid, case["id"])
        ended = (await client.get(f"/v1/compute/{gid}/cases/k", headers=headers)).json()["data"]
        state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
        await event(client, gid, headers, event_id="2", case_key="k", task="Again", budget_usdc="3")
        again = (await client.get(f"/v1/compute/{gid}/cases/k", headers=headers)).json()["data"]
        after = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
    assert ended["budget_usdc"] == "2.000000"  # the slice given, not the 0.5 used
    assert state["spent_usdc"] == "0.500000" and state["held_usdc"] == "0.000000"
    assert again["budget_usdc"] == "3.000000" and after["held_usdc"] == "3.000000"  # the new slice, all of it free


async def test_an_event_to_an_ended_goal_is_refused(kernel_factory) -> None:
    from tollway import storage
    from tollway_goals import ending

    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers, goal = await new_goal(client)
        gid = goal["goal_id"]
        first = await event(client, gid, headers, event_id="1", case_key="k", task="t")
        async with storage.transaction():
            await ending.end(gid, "completed", kernel.platform)
        late_root = await event(client, gid, headers, event_id="2", task="anyone there?")
        late_case = await event(client, gid, headers, event_id="3", case_key="k", task="t")
        repeat = await event(client, gid, headers, event_id="1", case_key="k", task="t")
        stored = await storage.row("SELECT COUNT(*) AS n FROM goals_events WHERE goal_id = {}", gid)
    assert first.status_code == 202
    assert [r.status_code for r in (late_root, late_case)] == [409, 409]
    assert late_root.json()["error"] == "goal_ended" and late_case.json()["error"] == "goal_ended"
    assert (
        repeat.status_code == 202 and repeat.json() == first.json()
    )  # an event accepted before the end answers as it did
    assert int(stored["n"]) == 1
