"""`Upstream`: how a plugin calls a public HTTP registry (docs/upstream.md).

One declaration per upstream gives the settings to register (its base URL and, when
it takes one, an API key), reads them from the tool's settings, sends the request
through the kernel's shared `httpx.AsyncClient`, and turns every failure into the
same `ToolError` (the call is then recorded failed and not charged):

| what happened | code | details |
|---|---|---|
| timeout, connection or other transport error | `provider_unavailable` | `reason` |
| 429 | `rate_limited` | `upstream_status`, `retry_after` (seconds) when Retry-After says |
| 401, 403 | `provider_auth` | `upstream_status` |
| any other status outside 2xx | `provider_unavailable` | `upstream_status` |
| a 2xx whose body is not JSON, where JSON is expected | `provider_unavailable` | `upstream_status` |

    NHTSA = Upstream(family="vehicles", name="nhtsa", label="NHTSA",
                     default_base_url="https://api.nhtsa.gov", description="...")
    register(*NHTSA.settings)                          # in register_settings
    body = await NHTSA.get_json(ctx, "/recalls/recallsByVehicle", params=...)

A source with answers of its own to read first (an explicit "no results" 404, a
rate-limit fault in a 200) calls `send`, looks at the `Reply`, then `json_of(reply)`.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict, cast

import httpx
import msgspec

from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.json_values import JSONValue
from tollway._core.plugin_api.settings_spec import Setting, setting_value
from tollway._core.plugin_api.tool import ToolContext, ToolError
from tollway._core.plugin_api.upstream_cache import keepable, note_answer

if TYPE_CHECKING:
    from typing_extensions import Unpack

# The status every upstream failure is answered with (docs/api.md, "Tool failures").
FAILURE_STATUS = 503
_NOT_JSON = object()
_UNREAD = object()


def retry_after_s(value: str | None, now: float | None = None) -> int | None:
    """Retry-After in whole seconds: delay-seconds as given, an HTTP-date as the time
    left until it (0 once past); None when absent or unreadable."""
    text = (value or "").strip()
    if text.isdigit():
        return int(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    left = when.timestamp() - (time.time() if now is None else now)
    return max(0, math.ceil(left))


class SendOptions(TypedDict, total=False):
    """The keywords of `Upstream.send` (what `get_json` passes on to it)."""

    base_url: str | None
    method: str
    params: Mapping[str, str] | None
    data: Mapping[str, str] | None
    headers: Mapping[str, str] | None
    calls: list[str] | None


class Reply:
    """An upstream's answer: status, headers, raw bytes, and the body as JSON."""

    def __init__(self, status: int, headers: Mapping[str, str], content: bytes, arrived_ms: int) -> None:
        self.status = status
        self.headers = headers  # the response's (`httpx.Headers`: names in any case)
        self.content = content
        self.arrived_ms = arrived_ms  # when the registry's answer arrived (earlier when reused)
        self._json: object = _UNREAD

    @classmethod
    def of(cls, response: httpx.Response) -> Reply:
        return cls(response.status_code, response.headers, response.content, now_ms())

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def decoded(self) -> object:
        """The body decoded as JSON (a `JSONValue`), or a private marker when it is not JSON."""
        if self._json is _UNREAD:
            try:
                self._json = msgspec.json.decode(self.content)
            except msgspec.DecodeError:
                self._json = _NOT_JSON
        return self._json

    @property
    def body(self) -> JSONValue:
        """The JSON body, or None when the body is not JSON (for reading error documents)."""
        decoded = self.decoded()
        return None if decoded is _NOT_JSON else cast("JSONValue", decoded)


class Upstream:
    """One public HTTP registry a plugin calls (see the module docstring).

    `name` prefixes the settings: `<name>_api_url` (default `default_base_url`) and,
    when `api_key` describes one, the optional `<name>_api_key`; `url_setting` names
    the URL setting otherwise. `label` is how messages name the source.
    """

    def __init__(
        self,
        *,
        family: str,
        name: str,
        label: str,
        default_base_url: str,
        description: str,
        api_key: str | None = None,
        url_setting: str | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        self.label = label
        self.timeout_s = timeout_s
        self.base_url_setting = Setting(family, url_setting or f"{name}_api_url", default_base_url, description)
        self.api_key_setting = Setting(family, f"{name}_api_key", None, api_key, secret=True) if api_key else None

    @property
    def settings(self) -> tuple[Setting, ...]:
        """What the plugin registers through `register_settings`."""
        return tuple(s for s in (self.base_url_setting, self.api_key_setting) if s is not None)

    @property
    def default_base_url(self) -> str:
        return self.base_url_setting.default or ""

    # -- settings --------------------------------------------------------------------
    def base_url(self, settings: ToolContext | Mapping[str, str]) -> str:
        """The configured base URL without a trailing slash (the default when unset)."""
        url = setting_value(_mapping(settings), self.base_url_setting) or ""
        return url.rstrip("/") or self.default_base_url.rstrip("/")

    def api_key(self, settings: ToolContext | Mapping[str, str]) -> str | None:
        if self.api_key_setting is None:
            return None
        return setting_value(_mapping(settings), self.api_key_setting)

    # -- failures --------------------------------------------------------------------
    def unavailable(self, message: str, **details: JSONValue) -> ToolError:
        return ToolError("provider_unavailable", message, status=FAILURE_STATUS, details=details or None)

    def rate_limited(self, reply: Reply) -> ToolError:
        details: dict[str, JSONValue] = {"upstream_status": reply.status}
        wait = retry_after_s(reply.headers.get("retry-after"))
        if wait is not None:
            details["retry_after"] = wait
        return ToolError(
            "rate_limited",
            f"{self.label} is limiting requests; try again later.",
            status=FAILURE_STATUS,
            details=details,
        )

    def refusal(self, reply: Reply, **details: JSONValue) -> ToolError:
        """The failure a non-2xx reply stands for; `details` are added to it."""
        if reply.status == 429:
            return self.rate_limited(reply)
        if reply.status in (401, 403):
            return ToolError(
                "provider_auth",
                f"{self.label} refused the request's credentials.",
                status=FAILURE_STATUS,
                details={"upstream_status": reply.status, **details},
            )
        return self.unavailable(f"{self.label} answered HTTP {reply.status}.", upstream_status=reply.status, **details)

    def check(self, reply: Reply) -> Reply:
        """The reply when it is a 2xx; else its failure is raised."""
        if not reply.ok:
            raise self.refusal(reply)
        return reply

    def json_of(self, reply: Reply) -> JSONValue:
        """The decoded body of a 2xx JSON reply; else the failure it stands for is raised."""
        body = self.check(reply).decoded()
        if body is _NOT_JSON:
            raise self.unavailable(
                f"{self.label} answered with something other than JSON.", upstream_status=reply.status
            )
        return cast("JSONValue", body)  # what `decoded` gave when not the marker

    # -- requests --------------------------------------------------------------------
    async def send(
        self,
        via: ToolContext | httpx.AsyncClient,
        path: str,
        *,
        base_url: str | None = None,
        method: str = "GET",
        params: Mapping[str, str] | None = None,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        calls: list[str] | None = None,
    ) -> Reply:
        """Send one request to `<base URL><path>` and return the reply, whatever its status.

        `via` is the tool's context (its `http` client and its settings' base URL) or a
        bare client with `base_url` given; `headers` are added to the request (an API key
        header: never logged, never in a failure). Transport failures raise `provider_unavailable`;
        `calls` gets the time the answer arrived. A GET through a tool's context may be
        answered from the kernel's short-lived memory of answers (core/plugin_api/upstream_cache.py).
        """
        http = via.http if isinstance(via, ToolContext) else via
        if base_url is None:
            if not isinstance(via, ToolContext):
                raise TypeError("base_url is required with a bare http client")
            base_url = self.base_url(via)
        url = base_url.rstrip("/") + path
        cache = via.upstream_cache if isinstance(via, ToolContext) and method == "GET" else None
        if cache is None:
            reply = await self._request(http, method, url, params, data, headers)
        else:
            key = (url, tuple(sorted((params or {}).items())), tuple(sorted((headers or {}).items())))
            kept = await cache.answer(
                key,
                lambda: self._request(http, method, url, params, data, headers),
                lambda r: keepable(r.status, r.headers, len(r.content), cache.max_body),
            )
            # each use decodes its own copy: a tool may change what it was given
            reply = Reply(kept.status, kept.headers, kept.content, kept.arrived_ms)
        note_answer(reply.arrived_ms)
        if calls is not None:
            calls.append(iso(reply.arrived_ms))
        return reply

    async def _request(
        self,
        http: httpx.AsyncClient,
        method: str,
        url: str,
        params: Mapping[str, str] | None,
        data: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> Reply:
        try:
            response = await http.request(
                method, url, params=params, data=data, headers=headers, timeout=self.timeout_s
            )
        except httpx.TimeoutException as exc:
            raise self.unavailable(f"{self.label} did not answer in time.", reason="timeout") from exc
        except httpx.HTTPError as exc:
            raise self.unavailable(f"{self.label} could not be reached.", reason=type(exc).__name__) from exc
        return Reply.of(response)

    async def get_json(
        self, via: ToolContext | httpx.AsyncClient, path: str, **request: Unpack[SendOptions]
    ) -> JSONValue:
        """`send` then `json_of`: the JSON body of a 2xx answer, every other outcome a failure."""
        return self.json_of(await self.send(via, path, **request))


def _mapping(settings: ToolContext | Mapping[str, str]) -> Mapping[str, str]:
    return settings.settings if isinstance(settings, ToolContext) else settings
