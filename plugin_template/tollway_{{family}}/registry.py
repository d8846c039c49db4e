"""The `{{family}}_package` tool: the template's worked example of a lookup that asks a
public HTTP registry, here PyPI's JSON API (`GET https://pypi.org/pypi/<project>/json`).

`PYPI` is a `tollway.Upstream`: it declares the base-URL setting
(`TOLLWAY_{{FAMILY}}_PYPI_API_URL`, so an operator can point it at a mirror and tests
at a replay), sends through the kernel's `ctx.http`, and turns every upstream failure
into a `ToolError` (timeouts and 5xx `provider_unavailable`, 429 `rate_limited`,
401/403 `provider_auth`), so a failed call is recorded and not charged. The answer
carries the shared `tollway.Evidence` block. Replace PyPI with your family's registry.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Tool, ToolContext, Upstream, source_text

SOURCE = "PyPI"  # the Python Package Index
PYPI = Upstream(
    family="{{family}}", name="pypi", label="PyPI", default_base_url="https://pypi.org/pypi",
    description="Base URL of PyPI's JSON API (or a mirror / local replay server serving the same paths).",
)

# Letters, digits, '.', '_' and '-' only: the name goes into the URL path as it is.
_PROJECT = r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$"
ProjectName = Annotated[str, Meta(min_length=1, max_length=100, pattern=_PROJECT, examples=["httpx"], description=(
    "A PyPI project name: letters, digits, '.', '_' and '-', starting and ending with a letter or digit."))]


class {{Family}}PackageInput(msgspec.Struct, forbid_unknown_fields=True):
    name: ProjectName


class {{Family}}Package(msgspec.Struct):
    name: str
    version: str | None  # the latest release
    summary: str | None
    requires_python: str | None
    releases: int  # how many versions PyPI lists


class {{Family}}PackageAnswer(msgspec.Struct):
    result: {{Family}}Package | None  # null when PyPI has no such project
    evidence: Evidence  # as_of: when the latest release's last file was uploaded


def parse_project(body: Any) -> tuple[{{Family}}Package, str | None]:
    """PyPI's project document -> (the package, the latest upload time or None)."""
    info = body.get("info") if isinstance(body, Mapping) else None
    if not isinstance(info, Mapping) or source_text(info.get("name")) is None:
        raise PYPI.unavailable("PyPI answered without project information.")
    releases = body.get("releases")
    files = body.get("urls")
    uploaded = [source_text(f.get("upload_time_iso_8601")) for f in files if isinstance(f, Mapping)] if isinstance(files, list) else []
    package = {{Family}}Package(
        name=str(source_text(info.get("name"))),
        version=source_text(info.get("version")),
        summary=source_text(info.get("summary")),
        requires_python=source_text(info.get("requires_python")),
        releases=len(releases) if isinstance(releases, Mapping) else 0,
    )
    return package, max((u for u in uploaded if u), default=None)


async def run(value: {{Family}}PackageInput, ctx: ToolContext) -> {{Family}}PackageAnswer:
    reply = await PYPI.send(ctx, f"/{value.name}/json")
    if reply.status == 404:  # PyPI's answer for a project it does not have: an empty, completed lookup
        return {{Family}}PackageAnswer(result=None, evidence=Evidence.now(SOURCE, as_of=None))
    package, as_of = parse_project(PYPI.json_of(reply))
    return {{Family}}PackageAnswer(result=package, evidence=Evidence.now(SOURCE, as_of=as_of))


PACKAGE = Tool(
    name="{{family}}_package",
    path="/v1/tools/{{family}}/package",
    title="{{Family}} package",
    description=(
        "A Python package as the Python Package Index lists it: its name, latest version, summary, "
        "supported Python versions and how many releases it has; no result when PyPI has no such project."
    ),
    category="data", subcategory="{{family}}_package", family="{{family}}", rate_limit="lookup", price="0.001",
    input_type={{Family}}PackageInput, output_type={{Family}}PackageAnswer, run=run,
    examples=(Example(title="A package by its project name", input={"name": "httpx"}),),
)
