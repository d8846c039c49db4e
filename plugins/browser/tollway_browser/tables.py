"""The browser plugin's tables: profiles (their storage state sealed), the artifacts tasks
made (screenshots and PDFs, kept 30 days like jobs) and the plugin's generated keys. Times
are unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Bytea, Integer, Text, Varchar
from piccolo.table import Table


class Profile(Table, tablename="browser_profiles"):
    id = Varchar(length=40, primary_key=True)  # bp_...
    agent_id = Varchar(length=36, index=True)  # the owner: no other agent sees it (404)
    name = Varchar(length=100)
    state = Text(null=True, default=None)  # the storage state (cookies, local storage), sealed (crypto.py)
    created_ms = BigInt()
    last_used_ms = BigInt(null=True, default=None)
    # Two tasks on one profile run one after the other: the task holding it, until when.
    held_by = Varchar(length=40, null=True, default=None)
    held_until_ms = BigInt(null=True, default=None)


class Artifact(Table, tablename="browser_artifacts"):
    id = Varchar(length=40, primary_key=True)  # art_...
    request_id = Varchar(length=40, index=True)  # the task that made it
    agent_id = Varchar(length=36)  # the task's owner
    number = Integer()  # its place among the task's artifacts, from 1
    kind = Varchar(length=20)  # screenshot, pdf
    media_type = Varchar(length=40)
    body = Bytea()
    created_ms = BigInt(index=True)


class BrowserKey(Table, tablename="browser_keys"):
    name = Varchar(length=40, primary_key=True)  # state, links
    value = Text()  # base64 of 32 random bytes


TABLES = [Profile, Artifact, BrowserKey]
