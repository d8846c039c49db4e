"""Accepted job calls and their state.

Piccolo tables of this area (money in integer micro-USDC, times in unix milliseconds);
its app is `migrations.APP`."""

from __future__ import annotations

from piccolo.columns import BigInt, BigSerial, Integer, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class Job(Table, tablename="tw_jobs", db=PLACEHOLDER_ENGINE):
    """An accepted asynchronous call. Claimed by a worker under a lease; every
    attempt increments `attempt`, and only the current attempt may write the
    outcome (fencing), so a worker that lost its lease cannot overwrite."""

    id = Varchar(length=40, primary_key=True)  # the request_id
    tool = Varchar(length=64)
    agent_id = Varchar(length=36)
    status = Varchar(length=16)  # pending, processing, completed, failed (the unfinished: tw_jobs_unfinished)
    input = Text()  # validated input, JSON
    result = Text(null=True, default=None)  # JSON
    error = Text(null=True, default=None)
    error_code = Varchar(length=40, null=True, default=None)
    error_category = Varchar(length=40, null=True, default=None)
    error_status = Integer(null=True, default=None)
    receipt_id = Varchar(length=40, null=True, default=None)
    attempt = Integer(default=0)
    lease_until_ms = BigInt(null=True, default=None)
    worker_id = Varchar(length=80, null=True, default=None)
    created_ms = BigInt(index=True)
    updated_ms = BigInt()
    started_ms = BigInt(null=True, default=None)  # first pick-up (dispatch latency)
    finished_ms = BigInt(null=True, default=None)
    message = Text(null=True, default=None)  # the running job's last progress report
    waiting_for = Varchar(length=16, null=True, default=None)  # 'payment': not claimable until its payment settles


class JobEvent(Table, tablename="tw_job_events", db=PLACEHOLDER_ENGINE):
    """One step of a job's life (core/jobs/job_events.py), written in the transaction of the
    state change it records: accepted, released, started, retried, progress, parked,
    completed, failed, cancelled. `seq` orders a job's events (each is written holding the
    job's row, so a job's events are numbered in the order they happened). Deleted with
    the job; a job keeps only its latest progress rows (`job_events.PROGRESS_KEPT`)."""

    seq = BigSerial(primary_key=True)
    job_id = Varchar(length=40, index=True)
    at_ms = BigInt()
    kind = Varchar(length=16)
    attempt = Integer(null=True, default=None)  # the attempt it happened in, when it was one's
    text = Text(null=True, default=None)  # the worker, the progress message, the failure code and message


TABLES: tuple[type[Table], ...] = (Job, JobEvent)
