"""The console's one table: its sign-in sessions, each kept as the SHA-256 of its cookie's
value (a stolen copy of the table signs nobody in). Times are unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Varchar
from piccolo.table import Table


class ConsoleSession(Table, tablename="console_sessions"):
    id = Varchar(length=64, primary_key=True)  # SHA-256 hex of the session cookie's value
    created_ms = BigInt()
    expires_ms = BigInt(index=True)  # expired rows are deleted at each sign-in


TABLES = [ConsoleSession]
