"""The people plugin's one table: the operator's opt-out list. Each entry is one identifier,
stored normalised (`match.py` says how) so a call is compared with one indexed lookup per
identifier it names. Times are unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Text, Varchar
from piccolo.table import Table


class OptOut(Table, tablename="people_opt_outs"):
    id = Varchar(length=40, primary_key=True)  # optout_...
    kind = Varchar(length=16)  # email | name_company | domain
    key = Varchar(length=500, unique=True)  # `<kind>:<normalised identifier>`: one entry per identifier
    email = Varchar(length=320, null=True, default=None)  # as the operator gave them, for the listing
    name = Varchar(length=200, null=True, default=None)
    company = Varchar(length=200, null=True, default=None)
    domain = Varchar(length=253, null=True, default=None)
    note = Text(null=True, default=None)  # the operator's own words (e.g. which request it answers)
    created_ms = BigInt()


TABLES = [OptOut]
