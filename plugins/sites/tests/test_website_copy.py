"""Copy written by the `llm` provider (web's chat_completions, answered by a scripted
stand-in: `tollway.testing.scripted_model`, a real Chat Completions server on 127.0.0.1) is checked against the brief:
the model is told once which sentences the brief does not support, and whatever it still
invents — a price, an award, an address — is taken out before the site is built."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from site_support import balance, run_job

from tollway.testing import ScriptedModel, credits_session, http_client, scripted_model, tool_call
from tollway_sites import copywriting

BRIEF = {
    "name": "Quay Bikes",
    "description": "Bicycle hire at the North quay, open from April to October.",
    "pages": [
        {"title": "Home", "purpose": "Say what we offer."},
        {"title": "Hire", "purpose": "Explain how hiring works: pick up at the quay, bring an ID."},
        {"title": "Contact", "purpose": "How to reach us.", "content": "Write to hello@quaybikes.example."},
    ],
    "contact_email": "hello@quaybikes.example",
}


def write(body: dict[str, Any]) -> dict[str, Any]:
    """The stand-in model writes each page; the first draft of Hire invents a price and an
    award, the second still invents an address."""
    asked = body["messages"][1]["content"]
    retry = body["messages"][-1]["role"] == "tool"
    if "“Home”" in asked:
        copy = {
            "headline": "Bicycle hire at the North quay",
            "intro": "Quay Bikes hires bicycles at the North quay. We are open from April to October.",
            "sections": [{"heading": "What we offer", "paragraphs": ["Bicycles for a day on the island."]}],
        }
    elif not retry:
        copy = {
            "headline": "How hiring works",
            "intro": "Pick up your bicycle at the quay and bring an ID. A day costs $15.",
            "sections": [
                {
                    "heading": "Why us",
                    "paragraphs": ["We won the 2024 Island Tourism Award.", "Bring an ID when you pick up."],
                }
            ],
        }
    else:
        copy = {
            "headline": "How hiring works",
            "intro": "Pick up your bicycle at the quay and bring an ID. Find us at 12 Harbour Street.",
            "sections": [{"heading": "Open", "paragraphs": ["We are open from April to October."]}],
        }
    return tool_call("page_copy", copy)  # fmt: skip


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with scripted_model(write) as stand_in:
        yield stand_in


async def test_written_copy_keeps_only_what_the_brief_supports(kernel_factory, model):
    script = model
    env = {"TOLLWAY_LLM_BASE_URL": model.base_url, "TOLLWAY_LLM_MODEL": "scripted"}
    kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser", "tollway_web"}, env=env)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "10")
        job = await run_job(kernel, client, auth, "/v1/tools/website/build", BRIEF)
        assert job["status"] == "completed", job
        site = job["result"]
        assert site["copy_written"] is True
        assert site["claims_removed"] == ["Find us at 12 Harbour Street."]
        assert await balance(client, auth) == "0.000000"
        hire = (await client.get("/sites/quay-bikes/hire.html")).text
        assert "Pick up your bicycle at the quay and bring an ID." in hire
        for invented in ("$15", "Award", "Harbour Street"):
            assert invented not in hire
        home = (await client.get("/sites/quay-bikes/")).text
        assert "Bicycle hire at the North quay" in home
        contact = (await client.get("/sites/quay-bikes/contact.html")).text
        assert "Write to hello@quaybikes.example." in contact
    # Home and Hire written (Hire twice: its first draft was sent back), Contact laid out as given
    assert len(script.requests) == 3
    told = script.requests[2]["messages"][-1]["content"]
    assert "$15" in told and "Award" in told


async def test_pages_without_content_need_a_model_before_payment(kernel_factory):
    kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser"})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "10")
        refused = await client.post("/v1/tools/website/build", json=BRIEF, headers=auth)
        assert refused.status_code == 503, refused.text
        body = refused.json()
        assert body["error"] == "provider_unavailable"
        assert body["details"]["fields"] == ["pages[0].content", "pages[1].content"]
        assert await balance(client, auth) == "10.000000"


@pytest.mark.parametrize(
    ("sentence", "reasons"),
    [
        ("Bicycle hire at the North quay.", []),
        ("A day costs 15 dollars.", ["the figure 15", "a price"]),
        ("We are the best hire on the island.", ["the claim “best”"]),
        ("Write to info@quaybikes.example.", ["the address info@quaybikes.example"]),
        ("Open from April to October since 1990.", ["the figure 1990", "the claim “since”"]),
        ("See www.quaybikes.example for more.", ["the link www.quaybikes.example"]),
    ],
)
def test_the_claim_check_names_what_the_brief_lacks(sentence, reasons):
    source = "Quay Bikes. Bicycle hire at the North quay, open from April to October. hello@quaybikes.example"
    assert copywriting.untraceable(sentence, source) == reasons


def test_given_content_is_laid_out_as_paragraphs_headings_and_lists():
    blocks = copywriting.blocks_of("Intro line one\nline two\n\n## Head\n- a\n- b\nafter list\n\n* c\n\n\n")
    assert [(b.kind, b.text, b.items) for b in blocks] == [
        ("p", "Intro line one line two", ()),
        ("h2", "Head", ()),
        ("ul", "", ("a", "b")),
        ("p", "after list", ()),
        ("ul", "", ("c",)),
    ]


async def test_rewrite_has_the_model_write_pages_whose_content_is_given(kernel_factory):
    def polish(body: dict[str, Any]) -> dict[str, Any]:
        return tool_call("page_copy", {"headline": "Bicycles at the quay", "intro": "Hire a bicycle at the North quay.",
                                       "sections": []})  # fmt: skip

    brief = {"name": "Quay Bikes", "description": "Bicycle hire at the North quay.", "rewrite": True,
             "pages": [{"title": "Home", "purpose": "Welcome.", "content": "bikes here. hire them at north quay"}]}  # fmt: skip
    with scripted_model(polish) as model:
        env = {"TOLLWAY_LLM_BASE_URL": model.base_url, "TOLLWAY_LLM_MODEL": "scripted"}
        kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser", "tollway_web"}, env=env)
        async with http_client(kernel) as client:
            _, auth = await credits_session(client, "10")
            job = await run_job(kernel, client, auth, "/v1/tools/website/build", brief)
            home = (await client.get("/sites/quay-bikes/")).text
    assert job["status"] == "completed" and job["result"]["copy_written"] is True, job
    assert "Hire a bicycle at the North quay." in home and "bikes here" not in home
    assert "bikes here. hire them at north quay" in model.requests[0]["messages"][1]["content"]
