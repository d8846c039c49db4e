"""`Tool` takes its job, history and admission declarations grouped (`job=`, `history=`,
`admission=`) or as the flat keywords, and reads both back the same way."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.jobs_plugin import ADD
from tollway import AdmissionChecks, Fact, HistoryDeclaration, JobDeclaration, Tool


async def _extras(request_id: str) -> dict:
    return {"request_id": request_id}


def _tool(**kw) -> Tool:
    base = {
        f.name: getattr(ADD, f.name)
        for f in dataclasses.fields(Tool)
        if f.name in ("title", "description", "category", "input_type", "output_type", "run", "price", "family")
    }
    return Tool(name="grouped_tool", path="/v1/tools/test/grouped", **{**base, **kw})


def test_a_job_declaration_makes_a_job_tool_and_fills_the_flat_fields() -> None:
    tool = _tool(job=JobDeclaration(accepted_status="queued", refund_failed_jobs=False, job_extras=_extras))
    assert (
        tool.mode == "job"
        and tool.accepted_status == "queued"
        and tool.refund_failed_jobs is False
        and tool.job_extras is _extras
    )
    assert tool.job == JobDeclaration(accepted_status="queued", refund_failed_jobs=False, job_extras=_extras)


def test_the_flat_keywords_are_still_accepted_and_read_back_grouped() -> None:
    flat = _tool(mode="job", accepted_status="queued", check=None, provider_kind="email", job_extras=_extras)
    grouped = _tool(
        job=JobDeclaration(accepted_status="queued", job_extras=_extras),
        admission=AdmissionChecks(provider_kind="email"),
    )
    assert flat == grouped and flat.job == grouped.job and flat.admission == grouped.admission


def test_history_and_admission_groups() -> None:
    def facts(value, output):
        return [Fact("grouped_tool", "k", {}, "test")]

    tool = _tool(
        history=HistoryDeclaration(facts=facts, searches=True), admission=AdmissionChecks(provider_kind="search")
    )
    assert tool.facts is facts and tool.searches and tool.provider_kind == "search" and tool.mode == "inline"
    with pytest.raises(ValueError, match="benchmark and searches need facts"):
        _tool(history=HistoryDeclaration(searches=True))


def test_a_flat_keyword_that_contradicts_its_group_is_refused() -> None:
    with pytest.raises(ValueError, match="accepted_status inside job="):
        _tool(job=JobDeclaration(accepted_status="queued"), accepted_status="active")
    with pytest.raises(ValueError, match="accepted_status must be one of"):
        _tool(job=JobDeclaration(accepted_status="running"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="for job tools"):
        _tool(mode="inline", job_extras=_extras)


def test_dataclasses_replace_changes_a_flat_field_or_a_group() -> None:
    tool = _tool(job=JobDeclaration(accepted_status="queued"))
    assert dataclasses.replace(tool, accepted_status="active").job.accepted_status == "active"
    assert dataclasses.replace(ADD, job=JobDeclaration(accepted_status="processing")).accepted_status == "processing"
    assert dataclasses.replace(tool, mode="job", title="x").accepted_status == "queued"
