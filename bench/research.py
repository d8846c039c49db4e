"""Deep research wall time, split by step, against local servers.

The local article site of plugins/web/tests (research_pages.py) is served on 127.0.0.1,
with a SearXNG-speaking server in front of it answering each query with the site's pages
for the topic; optionally (`--llm`) a Chat Completions stand-in writes the report. The
bench runs the registered `research` tool's job run in this process (SQLite kernel, the
configured providers, the real page reader) `--runs` times per depth and times each step
from the progress messages the job reports (planning, searching, reading, ranking,
writing). Prints one JSON line per depth: {depth, runs, sources, total_s_p50, steps_s_p50:
{step: seconds}}.

Run: `.venv/bin/python bench/research.py [--runs 5] [--llm]`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugins" / "web" / "tests"))

from research_support import SiteSearcher, completion, serve_chat, serve_searxng, serve_site  # noqa: E402

TOPICS = ("urban heat island", "honeybee colony collapse", "lithium-ion battery recycling")


async def run(runs: int, llm: bool) -> list[dict[str, object]]:
    import msgspec

    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    site_gen = serve_site()
    site = next(site_gen)
    server, searxng = serve_searxng(SiteSearcher(site))
    chat_gen = serve_chat() if llm else None
    home = Path(tempfile.mkdtemp())
    env = {
        "TOLLWAY_HOME": str(home),
        "TOLLWAY_DATABASE_URL": f"sqlite:///{home / 'bench.db'}",
        "TOLLWAY_OFFLINE": "1",
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x0d" * 32).decode(),
        "TOLLWAY_OPERATOR_TOKEN": "bench",
        "TOLLWAY_SEARCH_PROVIDER": "searxng",
        "TOLLWAY_SEARCH_SEARXNG_URL": searxng,
        "TOLLWAY_WEB_ALLOW_PRIVATE_ADDRESSES": "true",
    }
    if chat_gen is not None:
        chat = next(chat_gen)
        chat.script = lambda body: (
            200,
            completion("Cities are hotter than the country around them [1], and trees help [2]."),
            0.0,
        )
        env.update({"TOLLWAY_LLM_BASE_URL": chat.base, "TOLLWAY_LLM_MODEL": "bench-model"})
    kernel = build_kernel(load_settings(env), load_installed=True)
    await kernel.start()
    out = []
    try:
        tool = kernel.tools["research"]
        contexts = kernel.paid_calls.contexts
        for depth in ("quick", "deep"):
            totals, sources, steps = [], [], {}
            for i in range(runs):
                marks: list[tuple[str, float]] = []
                ctx = contexts.for_run(tool, f"req_bench_{depth}_{i}", None)

                async def report(message: str, marks=marks) -> None:
                    marks.append((message.split()[0].rstrip(":").lower(), time.perf_counter()))

                ctx.reporter = report
                value = msgspec.convert({"topic": TOPICS[i % len(TOPICS)], "depth": depth}, tool.input_type)
                t0 = time.perf_counter()
                result = await tool.run(value, ctx)
                end = time.perf_counter()
                totals.append(end - t0)
                sources.append(len(result.sources))
                bounds = marks + [("end", end)]
                spent: dict[str, float] = {}
                for (step, start), (_, stop) in zip(bounds, bounds[1:]):
                    spent[step] = spent.get(step, 0.0) + stop - start  # a step may report several times
                for step, seconds in spent.items():
                    steps.setdefault(step, []).append(seconds)
            out.append(
                {
                    "depth": depth,
                    "runs": runs,
                    "llm": llm,
                    "sources_p50": statistics.median(sources),
                    "total_s_p50": round(statistics.median(totals), 3),
                    "steps_s_p50": {k: round(statistics.median(v), 4) for k, v in steps.items()},
                }
            )
    finally:
        await kernel.stop()
        server.shutdown()
        for gen in (site_gen, chat_gen):
            if gen is not None:
                next(gen, None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--llm", action="store_true")
    args = parser.parse_args()
    for line in asyncio.run(run(args.runs, args.llm)):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
