"""The postal plugin's table: one row per physical mail job, kept for good (never purged).

It makes a job's run idempotent (docs/postal.md, "Idempotency"): the row, keyed by the
job's request id, holds the address verification once made, the Idempotency-Key sent to
Lob (derived from the request id) and, once Lob accepted it, the letter. A run that finds
the letter answers it again and never asks Lob for another; a run that finds a request
sent without an answer sends it again with the same key, and Lob gives back the same
letter."""

from __future__ import annotations

from piccolo.columns import BigInt, Integer, Text, Varchar
from piccolo.table import Table


class PostalLetter(Table, tablename="postal_letters"):
    request_id = Varchar(length=64, primary_key=True)  # the job (the paid call)
    agent_id = Varchar(length=64, index=True)
    state = Varchar(length=16)  # verifying, undeliverable, sending, sent
    color = Integer()  # 0 or 1
    lob_key = Varchar(length=128)  # the Idempotency-Key the provider sends with the letter
    verification = Text(null=True, default=None)  # JSON: deliverability, primary_line, secondary_line, last_line
    letter_id = Varchar(length=80, null=True, default=None)  # ltr_...
    expected_delivery_date = Text(null=True, default=None)  # YYYY-MM-DD
    created_ms = BigInt()
    updated_ms = BigInt()


TABLES = [PostalLetter]
