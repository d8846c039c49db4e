"""The website plugin's tables: sites (the brief, where they are published, their domain's
registration) and the files of each site's published build. Times are unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Bytea, Integer, Text, Varchar
from piccolo.table import Table


class Site(Table, tablename="website_sites"):
    id = Varchar(length=40, primary_key=True)  # site_...: made from the building job's request id
    agent_id = Varchar(length=36, index=True)  # the owner: no other agent sees or updates it (404)
    slug = Varchar(length=64, unique=True)  # served at /sites/<slug>/
    name = Varchar(length=100)
    brief = Text()  # the brief as it stands after the last update (JSON)
    version = Integer()  # the published build, from 1
    request_id = Varchar(length=40)  # the job that made the published build
    publication = Text(null=True, default=None)  # JSON: the GitHub Pages repository, branch, URL, commit
    domain = Varchar(length=253, null=True, default=None, index=True)
    domain_expires_ms = BigInt(null=True, default=None)  # the registration's expiry, from the domains provider
    domain_checked_ms = BigInt(null=True, default=None)
    domain_warned_ms = BigInt(null=True, default=None)  # the expiry a domain_expiring notification was sent for
    created_ms = BigInt()
    updated_ms = BigInt()


class SiteFile(Table, tablename="website_files"):
    id = Varchar(length=80, primary_key=True)  # <site id>/<version>/<n>
    site_id = Varchar(length=40, index=True)
    version = Integer()
    path = Varchar(length=200)  # index.html, about.html, site.<hash>.css, ...
    media_type = Varchar(length=60)
    body = Bytea()


TABLES = [Site, SiteFile]
