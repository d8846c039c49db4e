"""The deep research engine: plan, search, read, rank, write a cited report."""

from __future__ import annotations

from .llm import ChatCompletionsWriter
from .model import Hit, Page, ResearchMeta, ResearchReport, Source
from .pipeline import run_research
from .ports import Reader, Searcher, Writer
from .reader import WebReader

__all__ = [
    "ChatCompletionsWriter",
    "Hit",
    "Page",
    "Reader",
    "ResearchMeta",
    "ResearchReport",
    "Searcher",
    "Source",
    "WebReader",
    "Writer",
    "run_research",
]
