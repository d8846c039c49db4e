"""A plugin's own operations beside its tools (resource reads and writes, pages a person
opens): each declared once as a `Route`, served by the HTTP front with its OpenAPI entry,
and by the MCP front as a tool when `mcp` names one. `RouteRunner` runs a call: the
caller's credential, the rate limit, the body's validation, then the plugin's handler."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import msgspec

from .auth import Authenticator, Caller, require_proven
from .context import Platform
from .errors import ServiceError
from .query_params import QueryParam, declared
from .request import Answer, CallRequest
from .settings_spec import Setting
from .validation import FieldError, FieldErrors, Problem, convert, decode_object, field_error, invalid_fields, one_of_problems

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
# Who may call: `read` an agent proof of scope read (or any stronger credential), an
# access token or a held key; `write` a write proof, an access token or a held key;
# `public` anyone (pages reached by a signed link); `operator` the operator token.
RouteAuth = Literal["read", "write", "public", "operator"]
_PATH = re.compile(r"^/v1/[a-z0-9/_{}-]+$")
_PARAM = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


@dataclasses.dataclass(frozen=True)
class Page:
    """An answer that is not JSON: an HTML page a person opens in a browser (or, with
    `media_type`, another document such as an image; an empty one with a Location redirects)."""

    html: str | bytes
    status: int = 200
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    media_type: str = "text/html; charset=utf-8"


@dataclasses.dataclass(frozen=True)
class RouteReply:
    """A JSON answer whose status differs from the route's usual one."""

    status: int
    body: Any


@dataclasses.dataclass
class RouteCall:
    """One call of a route, as its handler sees it."""

    request: CallRequest
    params: Mapping[str, str]  # the path's {name} values
    caller: Caller | None  # None only on `public` and `operator` routes
    body: Any  # the decoded `body_type`, or None
    platform: Platform | None = None  # the kernel services (`tollway.Platform`): transactions, notifications, webhooks
    authenticator: Authenticator | None = None  # checks a wallet proof beside another credential
    args: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the declared query parameters, parsed

    @property
    def query(self) -> Mapping[str, str]:
        return self.request.query

    @property
    def agent_id(self) -> str:
        if self.caller is None:
            raise ServiceError(401, "unauthorized", "This route needs an agent credential.")
        return self.caller.agent_id

    def require_proof(self, what: str) -> None:
        """Refuse (401 `invalid_agent_proof`) unless the caller proves the agent: for a route
        that shows private data only on request (e.g. `include_body=true`); `what` names it."""
        require_proven(self.caller, self.request, what)

    async def wallet_proof(self) -> Caller | None:
        """The wallet a write proof (X-Agent-ID + X-Agent-Proof) proves beside the route's own
        credential, e.g. a soul key: None without a proof, 401 when it fails; its nonce is spent."""
        if self.authenticator is None:
            return None
        return await self.authenticator.wallet_proof(self.request)


Handler = Callable[[RouteCall], Awaitable[Any]]


@dataclasses.dataclass(frozen=True)
class Route:
    """One operation a plugin serves besides its tools.

    `handle` returns the answer's body (a msgspec Struct or JSON-able value, sent with
    `status`), a `RouteReply` (another status) or a `Page` (HTML); it raises `tollway.Refusal`
    for errors. `answer_type` documents the body for OpenAPI and MCP. A field check
    (`check` on the body, or one the handler calls) raising `FieldError`/`FieldErrors`
    is a 400 naming the fields, as a tool's; so is a `ValueError` raised by `check`."""

    method: Method
    path: str  # "/v1/compute/{goal_id}/cases"; {names} are path parameters
    name: str  # the operation id; the MCP tool's name when `mcp` is set
    title: str
    description: str
    handle: Handler
    auth: RouteAuth = "read"
    body_type: type[msgspec.Struct] | None = None
    answer_type: Any = None
    status: int = 200
    rate_limit: str | None = "free_read"
    tags: tuple[str, ...] = ()
    mcp: bool = False  # also an MCP tool: path parameters and body fields are its arguments
    # Query parameters: typed declarations (`QueryInt`, `QueryFlag`, `QueryChoice`, `QueryText`),
    # parsed before `handle` (every bad one named in one 400; the values in `RouteCall.args`)
    # and rendered in OpenAPI and MCP; a bare (name, description) is text.
    query: tuple[QueryParam | tuple[str, str], ...] = ()
    statuses: tuple[int, ...] = (400, 401, 404, 429)  # refusals it may answer, for OpenAPI
    page: bool = False  # answers a Page (HTML unless `media_type` says otherwise), not JSON
    media_type: str = "text/html"  # of a page route's answers, for OpenAPI
    # Groups of body fields of which a call gives exactly one, e.g. (("request_id", "job_id"),):
    # refused with every other failing field in one 400.
    exactly_one_of: tuple[tuple[str, ...], ...] = ()
    # A host of its own: when this setting (a base URL, e.g. https://t.example.com) is set, the
    # HTTP front serves the route only to requests whose Host is that URL's host name, and that
    # host nothing but the routes declaring it (404 otherwise); unset, any host serves it.
    host: Setting | None = None
    # Answers private data (message bodies, goal records, webhook URLs): a read proof, an
    # access token or a held key is needed whatever the proof mode; a bare X-Agent-ID gets 401.
    private: bool = False
    check: Callable[[Any], None] | None = None  # checks of the decoded body msgspec cannot express

    @property
    def query_params(self) -> tuple[QueryParam, ...]:
        return tuple(declared(entry) for entry in self.query)

    def __post_init__(self) -> None:
        if not _PATH.match(self.path):
            raise ValueError(f"route {self.name}: path must look like /v1/... with {{name}} parameters")
        if self.host is not None and self.mcp:
            raise ValueError(f"route {self.name}: a route on a host of its own is not an MCP tool")
        if self.auth not in ("read", "write", "public", "operator"):
            raise ValueError(f"route {self.name}: unknown auth {self.auth!r}")
        if self.private and self.auth != "read":
            raise ValueError(f"route {self.name}: only a read route is declared private (writes need a proof already)")

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(_PARAM.findall(self.path))

    def concrete_path(self, params: Mapping[str, str]) -> str:
        return _PARAM.sub(lambda m: params[m.group(1)], self.path)


def _query_args(route: Route, query: Mapping[str, str]) -> tuple[dict[str, Any], list[Problem]]:
    """The declared query parameters' values, and a problem for each one refused."""
    args: dict[str, Any] = {}
    problems: list[Problem] = []
    for param in route.query_params:
        try:
            args[param.name] = param.read(query)
        except ServiceError as exc:
            problems.append(Problem(param.name, exc.message))
    return args, problems


def _checked(check: Callable[[Any], None], body: Any) -> None:
    """Run a route's body check; a `ValueError` from it names the body."""
    try:
        check(body)
    except ValueError as exc:
        raise FieldError("$", str(exc) or "is not valid") from exc


class RouteRunner:
    """Runs plugin routes for both fronts: credential, rate limit, body, handler."""

    def __init__(self, *, auth: Authenticator, rate_gate: Any) -> None:
        self.auth = auth
        self.rate_gate = rate_gate
        self.platform: Platform | None = None  # set when the kernel starts

    async def call(self, route: Route, req: CallRequest, params: Mapping[str, str]) -> Answer | Page:
        async def run() -> Answer | Page:
            return await self._run(route, req, params)

        if route.rate_limit is None:
            return await run()
        out = await self.rate_gate.limited(route.rate_limit, req, run)
        if isinstance(out, tuple):  # a page: the limiter hands its headers back beside it
            page, headers = out
            return dataclasses.replace(page, headers={**headers, **page.headers})
        return out

    async def _run(self, route: Route, req: CallRequest, params: Mapping[str, str]) -> Answer | Page:
        caller = await self._caller(route, req)
        args, problems = _query_args(route, req.query)
        body = None
        if route.body_type is not None:
            obj = decode_object(req.body)
            body = convert(obj, route.body_type, also=[*problems, *one_of_problems(obj, route.exactly_one_of)])
        elif problems:
            raise invalid_fields(problems)
        try:
            if route.check is not None and body is not None:
                _checked(route.check, body)
            call = RouteCall(request=req, params=params, caller=caller, body=body, platform=self.platform, authenticator=self.auth, args=args)
            out = await route.handle(call)
        except (FieldError, FieldErrors) as exc:  # a field check, wherever it ran: never a 500
            raise field_error(exc) from exc
        if isinstance(out, Page):
            return out
        if isinstance(out, RouteReply):
            return Answer(out.status, out.body)
        return Answer(route.status, out)

    async def _caller(self, route: Route, req: CallRequest) -> Caller | None:
        if route.auth == "public":
            return None
        if route.auth == "operator":
            self.auth.require_operator(req)
            return None
        caller = await self.auth.caller(req, scope=route.auth)
        if caller is None:
            raise ServiceError(
                401, "unauthorized",
                "This route needs X-Agent-ID with a signed X-Agent-Proof, or Authorization: Bearer <access token>.",
            )
        if route.auth == "write" and not caller.can_spend:
            raise ServiceError(
                401, "invalid_agent_proof", "This route changes state: it needs a write proof or an access token.", {"reason": "missing"}
            )
        if route.private:
            require_proven(caller, req, "This route's answer")
        return caller


__all__ = ["Page", "RouteReply", "Route", "RouteAuth", "RouteCall", "RouteRunner"]
