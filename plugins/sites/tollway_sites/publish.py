"""Publication on GitHub Pages: the build's files pushed to a repository's Pages branch through
the agent's code-host connection (the goals plugin's GitHub App connections), with a CNAME
file when the site has a domain."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from tollway import FieldError, FieldErrors, Refusal, ToolContext
from tollway import ToolError as Failure

from . import render, wire


def connections_installed() -> bool:
    return importlib.util.find_spec("tollway_goals") is not None


def check_available(value: wire.Publish | None) -> None:
    """Before payment: publication elsewhere needs the code-host connections installed."""
    if value is not None and not connections_installed():
        raise FieldErrors(
            [FieldError("publish", "this service has no code-host connections (the tollway-goals plugin)")]
        )


async def to_github(
    ctx: ToolContext, target: wire.Publish, files: Sequence[render.File], domain: str | None, name: str
) -> wire.Publication:
    from tollway_goals import connections  # installed: check_available said so before payment

    try:
        published = await connections.publish_pages_for(
            ctx.agent_id or "",
            target.connection_id,
            target.repository,
            {f.path: f.body for f in files},
            ctx.plugin.platform if ctx.plugin is not None else None,
            message=f"Publish {name} (Tollway website build {ctx.request_id})",
            cname=domain.rstrip(".").lower() if domain else None,
            branch=target.branch,
        )
    except Refusal as refused:
        raise Failure(
            "provider_unavailable" if refused.status >= 500 else "invalid_input",
            f"The site passed its checks but could not be pushed to {target.repository}: {refused.message} "
            "Nothing was published and the build was refunded.",
            status=refused.status,
            details={"reason": refused.code, "details": refused.details},
        ) from None
    return wire.Publication(
        kind="github_pages",
        url=published.url,
        repository=target.repository,
        branch=target.branch,
        commit=published.commit_sha,
    )
