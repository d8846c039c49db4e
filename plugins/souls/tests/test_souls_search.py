"""Ranked full-text search over souls (tollway_souls.search), on SQLite and PostgreSQL:
the same corpus gives the same ordered ids on both databases."""

from __future__ import annotations

import hashlib

import pytest

from tollway import storage
from tollway_souls.search import reindex, search
from tollway_souls.tables import SoulAgent, SoulService

# id, slug, name, display_name, category, soul_md, services: (slug, title, description, enabled)
SOULS = (
    (
        "sa_babel",
        "babel",
        "Babel",
        "Babel Translator",
        "travel",
        "Menus and signs for travellers.",
        (("menu-translation", "Menu translation", "Translation of restaurant menus", True),),
    ),
    (
        "sa_alpha",
        "alpha",
        "Alpha",
        "Alpha Legal",
        "language",
        "Contracts, carefully.",
        (("legal-translation", "Legal translation", "Certified contracts", True),),
    ),
    (
        "sa_lingo",
        "lingo",
        "Lingo",
        "Lingo",
        "language",
        "I help with words.",
        (("document-translation", "Document translation", "Documents between English and French", True),),
    ),
    (
        "sa_tbot",
        "translation-bot",
        "Translation Bot",
        "Translation Bot",
        "language",
        "A friendly bot.",
        (("summaries", "Summaries", "Short summaries of long texts", True),),
    ),
    (
        "sa_poly",
        "polyglot",
        "Polyglot",
        "Polyglot",
        "language",
        "I love translation work and the café culture.",
        (("proofreading", "Proofreading", "Careful proofreading of essays", True),),
    ),
    (
        "sa_ghost",
        "ghost",
        "Ghost",
        "Ghost",
        "writing",
        "Quiet writer.",
        (
            ("secret-translation", "Translation", "A secret disabled service", False),
            ("ghostwriting", "Ghostwriting", "Blog posts in your voice", True),
        ),
    ),
    (
        "sa_coder",
        "coder",
        "Coder",
        "Coder",
        "code",
        "Writes Python.",
        (("code-review", "Code review", "Review of pull requests", True),),
    ),
)
TRANSLATION = ["sa_babel", "sa_alpha", "sa_lingo", "sa_tbot", "sa_poly"]

# (query, keyword arguments, expected ids in order): asserted as is on both databases
EXPECTED = (
    # services (4) + display name (2), then services ties by slug, then name only, then soul_md only
    ("translation", {}, TRANSLATION),
    ("Translation", {}, TRANSLATION),
    ("translating", {}, TRANSLATION),  # stemmed on both databases
    ("translations, please!", {}, []),  # "please" is not a stop word: required, and absent everywhere
    ("translation", {"category": "language"}, ["sa_alpha", "sa_lingo", "sa_tbot", "sa_poly"]),
    ("translation", {"category": "travel"}, ["sa_babel"]),
    ("translation", {"category": "code"}, []),
    ("translating menus", {}, ["sa_babel"]),  # every word required
    ("the document translation", {}, ["sa_lingo"]),  # stop words dropped
    ("french", {}, ["sa_lingo"]),
    ("transl", {}, TRANSLATION),  # the last word is a prefix
    ("proofread", {}, ["sa_poly"]),
    ("cafe", {}, ["sa_poly"]),  # diacritics folded
    ("CAFÉ", {}, ["sa_poly"]),
    ("secret", {}, []),  # a disabled service is not indexed
    ("disabled", {}, []),
    ("ghostwriting", {}, ["sa_ghost"]),
    ("bot", {}, ["sa_tbot"]),
    ("review", {}, ["sa_coder"]),
    ("code-review", {}, ["sa_coder"]),
    ("python translation", {}, []),
)
INDEXED = storage.statement(
    "SELECT count(*) AS n FROM souls_search WHERE soul_id = {}"
)  # the index is no Piccolo table
HOSTILE = (
    '"',
    "*",
    "NEAR(",
    "a OR",
    "-x",
    "'; DROP TABLE souls_agents; --",
    "",
    "   ",
    '^:()-*"',
    "{services}: x",
    "services : translation",
    "translation:*A",
    "translat:* | !code",
    "\\",
    "\x00",
    "NOT translation",
    "AND OR NOT",
    "translation" * 50,
    "x" * 500,
    ("translation " * 50)[:500],
    "翻訳 サービス",
    "Übersetzung",
    "🤖 bot ☕",
    "اَلْعَرَبِيَّةُ",
    "ﬁnance ²",
    "null",
    "%",
    "_",
    "translation'",
    "(translation)",
    "translation*",
    "tr*nslation",
)


async def _insert(
    soul_id: str, slug: str, name: str, display_name: str, category: str, soul_md: str, services: tuple
) -> None:
    await SoulAgent.insert(
        SoulAgent(
            id=soul_id,
            agent_id=f"agent-{soul_id}",
            wallet_address=None,
            slug=slug,
            name=name,
            display_name=display_name,
            category=category,
            soul_md=soul_md,
            avatar_url=None,
            key_hash=hashlib.sha256(soul_id.encode()).hexdigest(),
            webhook_url=None,
            webhook_secret=None,
            rating_sum=0,
            rating_count=0,
            created_ms=1,
            updated_ms=1,
        )
    )
    for n, (service_slug, title, description, enabled) in enumerate(services):
        await SoulService.insert(
            SoulService(
                id=f"svc_{soul_id}_{n}",
                soul_id=soul_id,
                slug=service_slug,
                title=title,
                description=description,
                price=1000,
                category=category,
                enabled=enabled,
                created_ms=1,
                updated_ms=1,
            )
        )


@pytest.fixture
async def corpus(kernel_factory):
    kernel = await kernel_factory(installed={"tollway_souls"})
    # the run's PostgreSQL database is shared by its tests and souls_search is not a Table the
    # fixture empties: start from an empty index
    await storage.statement("DELETE FROM souls_search").execute()
    async with storage.transaction():
        for soul in SOULS:
            await _insert(*soul)
            await reindex(soul[0])
    return kernel


async def test_ranked_results_are_the_same_on_both_databases(corpus) -> None:
    # one corpus for every query (each kernel costs a migration): the expected orders are
    # the same list whatever the database
    for query, kwargs, expected in EXPECTED:
        assert await search(query, **kwargs) == (expected, len(expected)), (query, kwargs)


async def test_services_outrank_names_which_outrank_soul_md(corpus) -> None:
    ids, total = await search("translation")
    assert ids.index("sa_lingo") < ids.index("sa_tbot") < ids.index("sa_poly")  # service, name, soul_md
    assert not {"sa_ghost", "sa_coder"} & set(ids) and total == 5


async def test_paging(corpus) -> None:
    assert await search("translation", limit=2) == (TRANSLATION[:2], 5)
    assert await search("translation", limit=2, offset=2) == (TRANSLATION[2:4], 5)
    assert await search("translation", limit=2, offset=4) == (TRANSLATION[4:], 5)
    assert await search("translation", limit=2, offset=10) == ([], 5)
    assert await search("translation", limit=0) == ([], 5)
    assert await search("translation", category="language", limit=1, offset=1) == (["sa_lingo"], 4)


async def test_hostile_queries_never_raise(corpus) -> None:
    for query in HOSTILE:
        ids, total = await search(query, limit=5)
        assert isinstance(ids, list) and isinstance(total, int) and len(ids) <= min(total, 5), query
        assert all(isinstance(i, str) for i in ids)
    assert await SoulAgent.count() == len(SOULS)


async def test_operator_words_are_plain_words(corpus) -> None:
    assert await search('"*NEAR( a OR -x') == ([], 0)  # only stop words and one short word left
    assert await search("translation OR code") == ([], 0)  # "or" is a stop word: both words required
    assert await search("(translation)*") == (TRANSLATION, 5)
    assert await search("services : translation") == ([], 0)  # "services" is a required word, not a column filter


async def test_reindex_after_changes(corpus) -> None:
    assert await search("summaries") == (["sa_tbot"], 1)
    async with storage.transaction():
        await SoulService.update(
            {
                SoulService.slug: "document-summaries",
                SoulService.title: "Document summaries",
                SoulService.description: "Summaries of documents",
            }
        ).where(SoulService.soul_id == "sa_lingo")
        await reindex("sa_lingo")
    assert await search("summaries") == (["sa_lingo", "sa_tbot"], 2)  # both by a service: slug order
    assert "sa_lingo" not in (await search("french"))[0]
    assert await search("translation") == ([i for i in TRANSLATION if i != "sa_lingo"], 4)

    await SoulService.update({SoulService.enabled: True}).where(SoulService.soul_id == "sa_ghost")
    await reindex("sa_ghost")
    assert await search("secret") == (["sa_ghost"], 1)

    await SoulAgent.update({SoulAgent.name: "Chatty", SoulAgent.display_name: "Chatty"}).where(
        SoulAgent.id == "sa_tbot"
    )
    await reindex("sa_tbot")
    assert "sa_tbot" not in (await search("translation"))[0]
    assert await search("chatty") == (["sa_tbot"], 1)

    await SoulService.delete().where(SoulService.soul_id == "sa_coder")
    await SoulAgent.delete().where(SoulAgent.id == "sa_coder")
    await reindex("sa_coder")
    assert await search("code") == ([], 0)
    assert await INDEXED.row("sa_coder") == {"n": 0}
    await reindex("sa_coder")  # a soul that is gone: nothing to do, no error

    await reindex("sa_babel")  # reindexing unchanged rows leaves one document, the same results
    assert await INDEXED.row("sa_babel") == {"n": 1}
    assert (await search("menus"))[0] == ["sa_babel"]
