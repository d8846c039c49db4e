"""How a `Route` is shown where its derived form is not the one wanted: another path of the
same operation (`Alias`), the MCP tool's own name, arguments and hints (`McpTool`), and the
refusal of a call without a credential in the route's own words (`agent_needed`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from tollway._core.basics.caller import Caller
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.json_values import JSONObject
from tollway._core.basics.request import CallRequest

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel


@dataclasses.dataclass(frozen=True, kw_only=True)
class Alias:
    """Another path serving the same operation, documented as an operation of its own
    (`name`, its operation id; `summary`, its OpenAPI summary, else the route's)."""

    path: str
    name: str
    summary: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class McpTool:
    """The route's MCP tool where it differs from the one derived from the declaration."""

    name: str | None = None  # the tool's name, when not the route's operation id
    # The tool's input schema from the derived one (e.g. terser fields); the arguments it names
    # are still those of the route (path parameters, declared query parameters, body fields).
    input: Callable[[JSONObject], JSONObject] | None = None
    args: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)  # path parameter -> argument name
    hints: Mapping[str, bool] | None = dataclasses.field(
        default=None, hash=False
    )  # ToolAnnotations, when not derived from the method
    note: Callable[[Kernel], str] | None = None  # a sentence after the description, from the running kernel
    unwrap: str | None = None  # the answer's field the tool returns (its type is the tool's output), e.g. "data"

    def argument(self, param: str) -> str:
        return self.args.get(param, param)


def agent_needed(message: str) -> Callable[[Caller | None, CallRequest], Caller]:
    """A `Route.caller_check` refusing a call that names no agent (401 `unauthorized`
    saying `message`); any caller `auth` resolved passes."""

    def check(caller: Caller | None, req: CallRequest) -> Caller:
        if caller is None:
            raise ServiceError(401, "unauthorized", message)
        return caller

    return check


__all__ = ["Alias", "McpTool", "agent_needed"]
