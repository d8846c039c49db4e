"""A `Writer` speaking OpenAI-compatible Chat Completions (hosted APIs, vLLM, llama.cpp, Ollama)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from tollway import ToolError

FAILURE_STATUS = 503
TIMEOUT = httpx.Timeout(120.0, connect=10.0)


def _unavailable(message: str, **details: Any) -> ToolError:
    return ToolError("provider_unavailable", message, status=FAILURE_STATUS, details=details or None)


def _blocked() -> ToolError:
    return ToolError("content_blocked", "The language model's content filter refused this request.", status=422)


def _is_filter_refusal(response: httpx.Response) -> bool:
    """A 400 whose error names a content filter (Azure-style `content_filter`)."""
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        return False
    return isinstance(error, dict) and "content_filter" in (str(error.get("code")), str(error.get("type")))


class ChatCompletionsWriter:
    """POST {base_url}/chat/completions with `model` and `messages`; the answer is
    `choices[0].message.content`. The API key, when given, goes as a Bearer token and
    is never put in an error."""

    name = "openai_chat"

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: httpx.Timeout = TIMEOUT,
    ) -> None:
        self._http = http
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key
        self._timeout = timeout

    async def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        return _content(await self._post({"model": self._model, "messages": [dict(m) for m in messages]}))

    async def chat(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> dict[str, Any]:
        """One turn with function tools: the assistant message (`content`, and `tool_calls`
        whose `function.arguments` is a JSON string), as the API sent it."""
        body: dict[str, Any] = {"model": self._model, "messages": [dict(m) for m in messages]}
        if tools:
            body["tools"] = [dict(t) for t in tools]
        return _message(await self._post(body))

    async def _post(self, body: Mapping[str, Any]) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = await self._http.post(
                self._url, json=body, headers=headers, timeout=self._timeout, follow_redirects=False
            )
        except httpx.TimeoutException as exc:
            raise _unavailable("The language model did not answer in time.", reason="timeout") from exc
        except httpx.HTTPError as exc:
            raise _unavailable("The language model could not be reached.", reason="connect_failed") from exc
        status = response.status_code
        if status in (401, 403):
            raise ToolError(
                "provider_auth",
                "The language model refused this service's credentials.",
                status=FAILURE_STATUS,
                details={"upstream_status": status},
            )
        if status == 429:
            raise ToolError(
                "rate_limited",
                "The language model is limiting requests; try again later.",
                status=FAILURE_STATUS,
                details={"upstream_status": status},
            )
        if status == 400 and _is_filter_refusal(response):
            raise _blocked()
        if status != 200:
            raise _unavailable(f"The language model answered HTTP {status}.", upstream_status=status)
        return response


def _message(response: httpx.Response) -> dict[str, Any]:
    try:
        choice = response.json()["choices"][0]
        message = choice["message"]
        finish = choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _unavailable(
            "The language model sent an answer that is not a chat completion.", reason="malformed"
        ) from exc
    if finish == "content_filter":
        raise _blocked()
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(calls, list) or not calls:
        calls = None
    if calls is None and not (isinstance(content, str) and content.strip()):
        raise _unavailable("The language model sent an empty answer.", reason="malformed")
    for call in calls or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(fn, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(fn.get("name"), str)
            or not isinstance(fn.get("arguments", ""), str)
        ):
            raise _unavailable("The language model sent a malformed tool call.", reason="malformed")
    out: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else None}
    if calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": c["function"].get("arguments") or "{}"},
            }
            for c in calls
        ]
    return out


def _content(response: httpx.Response) -> str:
    try:
        choice = response.json()["choices"][0]
        finish = choice.get("finish_reason")
        content = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _unavailable(
            "The language model sent an answer that is not a chat completion.", reason="malformed"
        ) from exc
    if finish == "content_filter":
        raise _blocked()
    if not isinstance(content, str) or not content.strip():
        raise _unavailable("The language model sent an empty answer.", reason="malformed")
    return content
