"""Sanctions screening speed and recall (issue 5).

Loads the full 2021-07 SDN set plus the 2025-12 consolidated set from
plugins/sanctions/tests/fixtures/ofac/, then runs 2,000 mixed queries on one core: names drawn
from the lists (an entry's own name or an alias) with a typo (one substitution
in a word of 4+ letters), a word swap, or a dropped word (names of 3+ words),
plus names not on the list. Prints one JSON line:
entries, names, index_build_s, p50_ms, p99_ms, queries_per_s, recall
(recall = share of drawn-from-list queries whose entry is returned at min_score 0.85).
"""

from __future__ import annotations

import json
import random
import statistics
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "sanctions"))
sys.path.insert(0, str(ROOT))

from tollway_sanctions import lists, matching  # noqa: E402
from tollway_sanctions.ofac import parse_list  # noqa: E402

OFAC = ROOT / "plugins" / "sanctions" / "tests" / "fixtures" / "ofac"  # recorded OFAC files, see the README there
FOLDERS = {"sdn": OFAC / "sdn_2021-07", "consolidated": OFAC / "consolidated_non_sdn_2025-12"}
N_QUERIES = 2000
NOT_ON_LIST = [
    "Jonathan Whitfield",
    "Maria Gonzalez Ortega",
    "Blue Harbor Logistics LLC",
    "Greenfield Dental Care",
    "Sakura Tea House Ltd",
    "Peter van der Berg",
    "Northwind Traders Inc",
    "Anna Karlsson",
    "George Bush",
    "Belletech Corp",
    "Hiroshi Tanaka",
    "Olivia Brown",
    "Contoso Pharmaceuticals SA",
    "Lakeside Bakery",
]


def typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    return word[:i] + rng.choice([c for c in string.ascii_lowercase if c != word[i].lower()]) + word[i + 1 :]


def variant(name: str, person: bool, rng: random.Random) -> str:
    words = name.replace(",", " ").split()
    kind = rng.choice(["typo", "swap", "drop"])
    strong = [
        i
        for i, w in enumerate(words)
        if len(matching.tokens(w, person)) == 1 and matching.weight(matching.tokens(w, person)[0], person) == 1
    ]
    if kind == "typo":
        long = [i for i in strong if len(words[i]) >= 4 and words[i].isalpha()]
        if long:
            i = rng.choice(long)
            words[i] = typo(words[i], rng)
    elif kind == "swap" and len(words) >= 2:
        i, j = rng.sample(range(len(words)), 2)
        words[i], words[j] = words[j], words[i]
    elif kind == "drop" and len(strong) >= 3:
        words.pop(rng.choice(strong))
    return " ".join(words)


def main() -> None:
    rng = random.Random(5)
    store = lists.ListStore(Path("/nonexistent"))
    loaded = {}
    for spec in lists.LISTS:
        data = [(FOLDERS[spec.key] / f).read_bytes() for f in spec.files]
        loaded[spec.key] = lists.LoadedList(spec, parse_list(*data, names=spec.files), time.time(), "bench")
    t0 = time.perf_counter()
    store._install(loaded)
    build_s = time.perf_counter() - t0
    entries = sum(len(l.entries) for l in loaded.values())
    names = len(store.persons.names) + len(store.others.names)

    pool = [(key, parsed) for key, l in loaded.items() for parsed in l.entries.values()]
    queries = []  # (text, person, expected entry number or None, list key)
    for _ in range(N_QUERIES):
        if rng.random() < 0.15:
            queries.append((rng.choice(NOT_ON_LIST), rng.random() < 0.5, None, None))
            continue
        key, parsed = rng.choice(pool)
        e = parsed.entry
        source = rng.choice([e.name, *(o.name for o in e.other_names)])
        queries.append((variant(source, parsed.is_person, rng), parsed.is_person, e.number, key))

    times = []
    found = drawn = 0
    start = time.perf_counter()
    for text, person, number, key in queries:
        t = time.perf_counter()
        hits = store.search(text, person=person, min_score=0.85)
        times.append((time.perf_counter() - t) * 1000)
        if number is not None:
            drawn += 1
            found += any(h.entry.number == number and h.list_name == loaded[key].spec.name for h in hits)
    total_s = time.perf_counter() - start
    times.sort()
    print(
        json.dumps(
            {
                "entries": entries,
                "names": names,
                "index_build_s": round(build_s, 3),
                "p50_ms": round(statistics.median(times), 3),
                "p99_ms": round(times[int(len(times) * 0.99) - 1], 3),
                "queries_per_s": round(len(queries) / total_s, 1),
                "recall": round(found / drawn, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
