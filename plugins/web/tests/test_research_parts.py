"""The research engine's parts on their own: planning, passages, citations, ranking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tollway import ToolError
from tollway_web.research import Page
from tollway_web.research.citations import check, cited
from tollway_web.research.model import Passage
from tollway_web.research.passages import clean, split
from tollway_web.research.plan import deterministic_queries, parse_sub_questions, plan_queries
from tollway_web.research.rank import PassageIndex
from tollway_web.research.text import key_phrases


class ScriptedWriter:
    name = "scripted"

    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.seen: list[Sequence[Mapping[str, str]]] = []

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        self.seen.append(messages)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_key_phrases_split_at_stop_words() -> None:
    assert key_phrases("effects of microplastics on coral reef health") == [
        "coral reef health",
        "effects",
        "microplastics",
    ]
    assert key_phrases("solar power") == []  # the whole topic is not repeated


def test_deterministic_queries_per_depth() -> None:
    quick = deterministic_queries("effects of microplastics on coral reef health", "quick")
    assert quick == [
        "effects of microplastics on coral reef health",
        "effects of microplastics on coral reef health overview",
        "effects of microplastics on coral reef health evidence",
        "effects of microplastics on coral reef health criticism",
    ]
    deep = deterministic_queries("effects of microplastics on coral reef health", "deep")
    assert len(deep) == 8 and deep[:4] == quick
    assert len(set(q.lower() for q in deep)) == 8
    long = deterministic_queries("x" * 600, "quick")
    assert all(len(q) <= 500 for q in long)


def test_sub_questions_are_parsed_strictly() -> None:
    assert parse_sub_questions('```json\n["a b", "c d"]\n```', 5) == ["a b", "c d"]
    assert parse_sub_questions('["a", "b", "c", "d"]', 2) == ["a", "b"]
    for bad in ("not json", "{}", "[]", '["a", 3]', '["  "]', '"one"'):
        assert parse_sub_questions(bad, 5) is None


async def test_planning_with_a_writer_is_bounded_and_falls_back() -> None:
    many = ScriptedWriter('["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10"]')
    assert await plan_queries("topic", "quick", many) == ["topic", "q1", "q2", "q3"]
    assert "at most 3" in many.seen[0][0]["content"]
    assert len(await plan_queries("topic", "deep", many)) == 8
    failing = ScriptedWriter(ToolError("rate_limited", "slow down", status=503))
    assert await plan_queries("topic", "quick", failing) == deterministic_queries("topic", "quick")


def test_citations_check_keeps_valid_numbers_only() -> None:
    text, removed, kept = check("A [1]. B [2, 9]. C [9]. D [4; 1]. Link [x](http://e/1).", {1, 2})
    assert text == "A [1]. B [2]. C. D [1]. Link [x](http://e/1)."
    assert (removed, kept) == (3, 3)
    assert cited(text) == [1, 2, 1]


def test_passages_drop_headings_links_and_the_pages_own_bracket_numbers() -> None:
    words = " ".join(f"word{i}" for i in range(30))
    page = Page(
        url="http://e/1",
        title="T",
        retrieved_at="2026-01-01T00:00:00.000Z",
        markdown=f"# Title\n\nSee [the report](http://e/r) \\[4\\] and [5, 6]. {words}.\n\n## Part two\n\nShort.",
    )
    found = split(page, 3)
    assert len(found) == 1 and found[0].source == 3
    assert found[0].text.startswith("See the report (4) and (5, 6). word0")
    assert "Title" not in found[0].text and "Part two" not in found[0].text
    assert clean("> quoted\n- item") == "quoted item"


def test_bm25_ranks_the_relevant_passage_first_one_per_source() -> None:
    passages = [
        Passage(1, "Varroa mites spread deformed wing virus through honeybee colonies."),
        Passage(1, "Varroa mites are treated with oxalic acid in winter."),
        Passage(2, "Almond orchards rely on migratory beekeeping every spring."),
        Passage(3, "Cool roofs reflect sunlight and lower indoor temperatures."),
    ]
    index = PassageIndex(passages)
    top = index.top("varroa mites virus", 3)
    assert top[0] is passages[0] and len(top) == 1  # one per source, and no zero-score filler
    assert index.top("the of and", 3) == []
    assert index.top("oxalic acid treatment", 3) == [passages[1]]
    # A passage quoted under one question is not quoted again under the next.
    used: set[int] = set()
    first, second = index.top("varroa", 1, exclude=used), index.top("varroa", 1, exclude=used)
    assert first != second and {first[0].text, second[0].text} == {passages[0].text, passages[1].text}
    assert index.top("varroa", 1, exclude=used) == []
    assert PassageIndex([]).top("anything", 3) == []


def test_addresses_of_one_page_normalise_alike() -> None:
    from tollway_web.research.gather import normalized

    assert normalized("HTTP://Example.COM/a/#top") == normalized("http://example.com/a") == "http://example.com/a"
    assert normalized("http://example.com/A") != normalized("http://example.com/a")  # paths keep their case


async def test_any_reader_failure_is_counted() -> None:
    """A read that raises, or a page with no passage of text (too short to quote), is a failure."""
    from tollway_web.research.budget import Deadline
    from tollway_web.research.gather import read_until

    class Flaky:
        async def read(self, url: str) -> Page:
            if "bad" in url:
                raise RuntimeError("extraction crashed")
            text = (
                "Cookie settings"
                if "short" in url
                else "A page long enough to quote: " + "words of a real article " * 4
            )
            return Page(url=url, title=None, markdown=text, retrieved_at="2026-01-01T00:00:00.000Z")

    told: list[str] = []

    async def tell(message: str) -> None:
        told.append(message)

    urls = ["http://e/bad1", "http://e/1", "http://e/short", "http://e/2", "http://e/3", "http://e/4"]
    pages, failed = await read_until(Flaky(), urls, 3, 2, 5.0, tell, Deadline(60))
    assert [p.url for p in pages] == ["http://e/1", "http://e/2", "http://e/3"]
    assert failed == 2
    assert told == ["reading 3/6", "reading 5/6"]


def test_research_search_time_setting() -> None:
    """Seconds as set; anything not a positive number gives the depth's default; at most 540."""
    from tollway import ToolContext
    from tollway_web.settings import research_search_s

    def seconds(depth: str, **values: str) -> float:
        ctx = ToolContext(request_id="r", agent_id=None, http=None, settings=values)  # type: ignore[arg-type]
        return research_search_s(ctx, depth)

    assert seconds("quick", research_quick_search_s="1.5") == 1.5
    assert seconds("deep", research_quick_search_s="1.5") == 480
    assert (
        seconds("quick")
        == seconds("quick", research_quick_search_s="soon")
        == seconds("quick", research_quick_search_s="-3")
        == 150
    )
    assert seconds("quick", research_quick_search_s="nan") == 150
    assert seconds("deep", research_deep_search_s="9999") == 540
