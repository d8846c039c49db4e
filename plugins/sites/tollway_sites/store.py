"""Sites and their published files in the database: a build's files replace the site's in one
transaction (a visitor sees the old build or the new one, never a mix), slugs are unique,
and only the owner reads a site's record."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import Any

from tollway import Refusal, now_ms, storage

from .render import File
from .tables import Site, SiteFile

SLUG_LENGTH = 48


def slug_base(name: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:SLUG_LENGTH].strip("-")
    return base or "site"


async def owned(site_id: str, agent_id: str) -> dict[str, Any]:
    """The caller's site; anyone else's, or none, is 404."""
    row = await Site.select().where(Site.id == site_id).first()
    if row is None or row["agent_id"] != agent_id:
        raise Refusal("not_found", f"No website {site_id!r}.", status=404)
    return row


async def by_slug(slug: str) -> dict[str, Any] | None:
    return await Site.select(Site.id, Site.version).where(Site.slug == slug).first()


async def free_slug(name: str, site_id: str) -> str:
    """The site's slug if it has one, else its name's words, made unique."""
    row = await Site.select(Site.slug).where(Site.id == site_id).first()
    if row is not None:
        return row["slug"]
    base = slug_base(name)
    for n in range(1, 50):
        slug = base if n == 1 else f"{base}-{n}"
        if await Site.count().where(Site.slug == slug) == 0:
            return slug
    return f"{base[:36]}-{secrets.token_hex(4)}"


async def save(
    *,
    site_id: str,
    agent_id: str,
    slug: str,
    name: str,
    brief: dict[str, Any],
    request_id: str,
    files: Sequence[File],
    publication: dict[str, Any] | None,
    domain: str | None,
) -> int:
    """Publish `files` as the site's next version; the version number."""
    now = now_ms()
    async with storage.transaction():
        row = await storage.lock_rows(Site.select().where(Site.id == site_id)).first()
        version = 1 if row is None else int(row["version"]) + 1
        if row is None:
            await Site.insert(
                Site(
                    id=site_id,
                    agent_id=agent_id,
                    slug=slug,
                    name=name,
                    brief=storage.dumps(brief),
                    version=version,
                    request_id=request_id,
                    publication=None if publication is None else storage.dumps(publication),
                    domain=domain,
                    created_ms=now,
                    updated_ms=now,
                )
            )
        else:
            changes: dict[Any, Any] = {
                Site.name: name,
                Site.brief: storage.dumps(brief),
                Site.version: version,
                Site.request_id: request_id,
                Site.publication: None if publication is None else storage.dumps(publication),
                Site.updated_ms: now,
            }
            if domain != row["domain"]:  # a new domain is read afresh by the expiry check
                changes.update(
                    {Site.domain: domain, Site.domain_expires_ms: None, Site.domain_checked_ms: None,
                     Site.domain_warned_ms: None}
                )  # fmt: skip
            await Site.update(changes).where(Site.id == site_id)
        await SiteFile.delete().where(SiteFile.site_id == site_id)
        for n, file in enumerate(files, start=1):
            await SiteFile.insert(
                SiteFile(
                    id=f"{site_id}/{version}/{n}",
                    site_id=site_id,
                    version=version,
                    path=file.path,
                    media_type=file.media_type,
                    body=file.body,
                )
            )
    return version


async def file(site_id: str, path: str) -> dict[str, Any] | None:
    return (
        await SiteFile.select(SiteFile.media_type, SiteFile.body)
        .where((SiteFile.site_id == site_id) & (SiteFile.path == path))
        .first()
    )
