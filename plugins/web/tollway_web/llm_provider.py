"""The `llm` provider this plugin brings: any OpenAI-compatible Chat Completions service
(hosted APIs, vLLM, llama.cpp's server, Ollama), configured by TOLLWAY_LLM_BASE_URL,
TOLLWAY_LLM_MODEL and, where the service wants one, TOLLWAY_LLM_API_KEY."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from tollway import Provider, Setting, to_micro

from .research.llm import ChatCompletionsWriter

KIND = "llm"
BASE_URL = Setting(
    KIND,
    "base_url",
    None,
    "Base URL of an OpenAI-compatible API (its /chat/completions is called), e.g. http://127.0.0.1:8000/v1.",
)
MODEL = Setting(KIND, "model", None, "The model name sent with each request.")
API_KEY = Setting(
    KIND,
    "api_key",
    None,
    "The API key, sent as a Bearer token (leave unset for a local server that needs none).",
    secret=True,
)
COST = Setting(KIND, "cost_usdc", "0", "What one completion costs us in USDC, on average, under the operator's plan.")


def _build(settings: Mapping[str, str], http: httpx.AsyncClient) -> ChatCompletionsWriter:
    return ChatCompletionsWriter(http, settings["base_url"], settings["model"], settings.get("api_key") or None)


CHAT_COMPLETIONS = Provider(
    kind=KIND,
    name="chat_completions",
    build=_build,
    settings=(BASE_URL, MODEL, API_KEY, COST),
    requires=(BASE_URL, MODEL),
    cost_estimate=lambda settings: to_micro(settings.get("cost_usdc") or "0"),
    description="OpenAI-compatible Chat Completions (research writes its report with it).",
)
