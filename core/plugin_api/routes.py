"""Every operation besides the tools (a plugin's resource reads and writes and pages a person
opens; the kernel's balance, receipts, jobs, watches, sign-in and operator routes): each
declared once as a `Route`, served by the HTTP front with its OpenAPI entry, and by the MCP
front as a tool when `mcp` says so. `RouteRunner` runs a call: the rate limit, the caller's
credential, the body's validation, then the handler."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import msgspec

from tollway._core.basics.caller import Caller
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.basics.validation import (
    FieldError,
    FieldErrors,
    Problem,
    convert,
    decode_object,
    field_error,
    invalid_fields,
    one_of_problems,
)
from tollway._core.plugin_api.context import Platform
from tollway._core.plugin_api.query_params import QueryParam, QueryValue, declared
from tollway._core.plugin_api.route_shapes import Alias, McpTool
from tollway._core.plugin_api.settings_spec import Setting

if TYPE_CHECKING:  # the runner's collaborators: a route's declaration needs none of them
    from tollway._core.auth.auth import Authenticator
    from tollway._core.kernel import Kernel

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
# Who may call: `read` an agent proof of scope read (or any stronger credential), an
# access token or a held key; `write` a write proof, an access token or a held key;
# `public` anyone (pages reached by a signed link); `operator` the operator token;
# `signed_in` as `write`, but an access token only from signing in (never an operator-issued
# one); `proof` a write proof or a held key, never an access token; `optional` anyone, an
# X-Agent-ID when given naming who it is for (the handler reads it).
RouteAuth = Literal["read", "write", "public", "operator", "signed_in", "proof", "optional"]
AUTHS = ("read", "write", "public", "operator", "signed_in", "proof", "optional")
# /v1/..., a page of the service's own (/healthz, /sites/{slug}/{file}, /console/receipts/{receipt_id}:
# a word, then words and {name} parameters), or a well-known URI of RFC 8615 (/.well-known/acp.json)
_PATH = re.compile(
    r"^/(v1/[a-z0-9/_{}-]+|[a-z0-9_-]+(/([a-z0-9_-]+|\{[a-z_][a-z0-9_]*\}))*|\.well-known/[a-z0-9_-]+(\.[a-z0-9]+)?)$"
)
_PARAM = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# A route's body: its `body_type` (`Route[None]` and `RouteCall[None]` for a route without one).
Body = TypeVar("Body")


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
    body: object  # a msgspec Struct or a JSON value, as a handler's answer


@dataclasses.dataclass
class RouteCall(Generic[Body]):
    """One call of a route, as its handler sees it: `RouteCall[Registration]` for a route
    whose `body_type` is `Registration`."""

    request: CallRequest
    params: Mapping[str, str]  # the path's {name} values
    caller: Caller | None  # None only on `public`, `optional` and `operator` routes
    # The decoded `body_type` (None for a route without one, and on a `raw_body` route,
    # whose handler reads the request's body itself).
    body: Body
    platform: Platform | None = None  # the kernel services (`tollway.Platform`): transactions, notifications, webhooks
    authenticator: Authenticator | None = None  # checks a wallet proof beside another credential
    args: Mapping[str, QueryValue] = dataclasses.field(default_factory=dict)  # the declared query parameters, parsed
    kernel: Kernel | None = None  # the kernel itself, for its own routes (core/builtin.py); plugins use `platform`

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
        from tollway._core.auth.auth import require_proven  # the check lives with the credentials

        require_proven(self.caller, self.request, what)

    async def wallet_proof(self) -> Caller | None:
        """The wallet a write proof (X-Agent-ID + X-Agent-Proof) proves beside the route's own
        credential, e.g. a soul key: None without a proof, 401 when it fails; its nonce is spent."""
        if self.authenticator is None:
            return None
        return await self.authenticator.wallet_proof(self.request)


# A route's handler: the answer's body (a msgspec Struct or a JSON value), a `RouteReply` or a `Page`.
Handler = Callable[[RouteCall[Body]], Awaitable[object]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Route(Generic[Body]):
    """One operation served besides the tools: a plugin's, or the kernel's own.

    `handle` returns the answer's body (a msgspec Struct or JSON-able value, sent with
    `status`), a `RouteReply` (another status) or a `Page` (HTML); it raises `tollway.Refusal`
    for errors. `answer_type` types the body for OpenAPI and MCP. A field check
    (`check` on the body, or one the handler calls) raising `FieldError`/`FieldErrors`
    is a 400 naming the fields, as a tool's; so is a `ValueError` raised by `check`."""

    method: Method
    path: str  # "/v1/compute/{goal_id}/cases"; {names} are path parameters
    name: str  # the operation id; the MCP tool's name when `mcp` is set
    title: str
    description: str
    handle: Handler[Body]
    auth: RouteAuth = "read"
    body_type: type[Body] | None = None
    answer_type: type[msgspec.Struct] | None = None
    status: int = 200
    rate_limit: str | None = "free_read"
    tags: tuple[str, ...] = ()
    # Also an MCP tool: path parameters, declared query parameters and body fields are its
    # arguments; an `McpTool` says where the tool differs from the derived one.
    mcp: bool | McpTool = False
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
    check: Callable[[Body], None] | None = None  # checks of the decoded body msgspec cannot express
    # Who may call, in the route's own words: given the caller `auth` resolved (None: no
    # credential), the caller to hand on, or a refusal; replaces the runner's own checks.
    caller_check: Callable[[Caller | None, CallRequest], Caller | None] | None = None
    raw_body: bool = False  # the handler reads the body itself; `body_type` only documents it
    # A page route answering a protocol's own JSON (`media_type` application/json): `answer_type`
    # documents its answers and `error_type` the error object of its refusals, in OpenAPI.
    error_type: type[msgspec.Struct] | None = None
    aliases: tuple[Alias, ...] = ()  # other paths of the same operation, each with its own id
    # OpenAPI only: the summary (default `title`), whether `description` is shown, the answer's
    # description (default `title`), other answers of `answer_type` by status, the header
    # carrying an x402 payment (then X-Quote-ID too, and PAYMENT-RESPONSE on the answers), and
    # what each path parameter is (default "The <name>."), and refusals worded for this route.
    summary: str | None = None
    describe_in_openapi: bool = True
    answer_description: str | None = None
    also_answers: tuple[tuple[int, str], ...] = ()
    paid_with: str | None = None
    param_docs: tuple[tuple[str, str], ...] = ()
    refusal_docs: tuple[tuple[int, str], ...] = ()

    @property
    def query_params(self) -> tuple[QueryParam, ...]:
        return tuple(declared(entry) for entry in self.query)

    @property
    def mcp_tool(self) -> McpTool | None:
        """How its MCP tool differs from the derived one; None when it is no MCP tool."""
        if isinstance(self.mcp, McpTool):
            return self.mcp
        return McpTool() if self.mcp else None

    @property
    def tool_name(self) -> str:
        tool = self.mcp_tool
        return tool.name if tool is not None and tool.name else self.name

    def __post_init__(self) -> None:
        for path in (self.path, *(a.path for a in self.aliases)):
            if not _PATH.match(path) or _PARAM.findall(path) != _PARAM.findall(self.path):
                raise ValueError(
                    f"route {self.name}: path must look like /v1/... with {{name}} parameters (an alias's the same), "
                    "/<word> (then words and {name} parameters) or /.well-known/<name>"
                )
        if self.host is not None and self.mcp:
            raise ValueError(f"route {self.name}: a route on a host of its own is not an MCP tool")
        if self.auth not in AUTHS:
            raise ValueError(f"route {self.name}: unknown auth {self.auth!r}")
        if self.private and self.auth != "read":
            raise ValueError(f"route {self.name}: only a read route is declared private (writes need a proof already)")

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(_PARAM.findall(self.path))

    def param_doc(self, name: str) -> str:
        return dict(self.param_docs).get(name, f"The {name.replace('_', ' ')}.")

    def concrete_path(self, params: Mapping[str, str]) -> str:
        return _PARAM.sub(lambda m: params[m.group(1)], self.path)


def _query_args(route: Route[Body], query: Mapping[str, str]) -> tuple[dict[str, QueryValue], list[Problem]]:
    """The declared query parameters' values, and a problem for each one refused."""
    args: dict[str, QueryValue] = {}
    problems: list[Problem] = []
    for param in route.query_params:
        try:
            args[param.name] = param.read(query)
        except ServiceError as exc:
            problems.append(Problem(param.name, exc.message))
    return args, problems


def _checked(check: Callable[[Body], None], body: Body) -> None:
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
        self.kernel: Kernel | None = None  # the kernel, for its own routes (set by the kernel)

    async def call(self, route: Route, req: CallRequest, params: Mapping[str, str]) -> Answer | Page:
        if route.rate_limit is None:
            return await self._run(route, req, params)
        answer = await self.rate_gate.limited(route.rate_limit, req, lambda: self._answer(route, req, params))
        if isinstance(answer.body, Page):  # a page: the limiter's headers beside its own
            return dataclasses.replace(answer.body, headers={**answer.headers, **answer.body.headers})
        return answer

    async def _answer(self, route: Route, req: CallRequest, params: Mapping[str, str]) -> Answer:
        """The call as an `Answer` (a page as its body), for the rate gate to add its headers to."""
        out = await self._run(route, req, params)
        return Answer(out.status, out) if isinstance(out, Page) else out

    async def _run(self, route: Route, req: CallRequest, params: Mapping[str, str]) -> Answer | Page:
        caller = await self._caller(route, req)
        args, problems = _query_args(route, req.query)
        body = None
        if route.body_type is not None and not route.raw_body:
            obj = decode_object(req.body)
            body = convert(obj, route.body_type, also=[*problems, *one_of_problems(obj, route.exactly_one_of)])
        elif problems:
            raise invalid_fields(problems)
        try:
            if route.check is not None and body is not None:
                _checked(route.check, body)
            call = RouteCall(
                request=req,
                params=params,
                caller=caller,
                body=body,
                platform=self.platform,
                authenticator=self.auth,
                args=args,
                kernel=self.kernel,
            )
            out = await route.handle(call)
        except (FieldError, FieldErrors) as exc:  # a field check, wherever it ran: never a 500
            raise field_error(exc) from exc
        if isinstance(out, (Page, Answer)):
            return out
        if isinstance(out, RouteReply):
            return Answer(out.status, out.body)
        return Answer(route.status, out)

    async def _caller(self, route: Route, req: CallRequest) -> Caller | None:
        if route.auth in ("public", "optional"):
            return None
        if route.auth == "operator":
            self.auth.require_operator(req)
            return None
        caller = await self.auth.caller(req, scope="read" if route.auth == "read" else "write")
        if route.caller_check is not None:
            return route.caller_check(caller, req)
        if caller is None:
            raise ServiceError(
                401,
                "unauthorized",
                "This route needs X-Agent-ID with a signed X-Agent-Proof, or Authorization: Bearer <access token>.",
            )
        if route.auth != "read" and not caller.can_spend:
            raise ServiceError(
                401,
                "invalid_agent_proof",
                "This route changes state: it needs a write proof or an access token.",
                {"reason": "missing"},
            )
        if route.auth == "signed_in" and caller.via == "token" and caller.token_origin != "sign_in":
            raise ServiceError(
                403,
                "signed_in_token_needed",
                "This route takes an access token only from signing in (POST /v1/auth/sign-in with the wallet's write proof), or a write proof.",
            )
        if route.auth == "proof" and caller.via == "token":
            raise ServiceError(
                403, "proof_needed", "This route needs the wallet's write proof; an access token is not enough."
            )
        if route.private:
            from tollway._core.auth.auth import require_proven

            require_proven(caller, req, "This route's answer")
        return caller


__all__ = ["Alias", "McpTool", "Page", "RouteReply", "Route", "RouteAuth", "RouteCall", "RouteRunner"]
