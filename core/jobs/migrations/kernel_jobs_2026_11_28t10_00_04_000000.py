"""The third migration of core/jobs: the index of the jobs not finished yet replaces the
index of every job's status, and the index of their agent, which no query reads, goes.

A worker's claim takes the oldest runnable jobs (`ORDER BY created_ms LIMIT n` over the
pending jobs and the processing ones whose lease ran out): read through the index of every
job's creation time, it stepped over each finished job first, a cost that grew with the table
(30 days of jobs) and was paid several times per job. The partial index holds only the
unfinished ones, a handful among millions, in that order. Every change of a job's status
writes a new entry in each of its indexes (a changed indexed column rules out a heap-only
update): three now (two once it is finished), four before. Idempotent."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import Varchar

from tollway._core.storage.migration_steps import drop_column_index, run_ddl

ID = "2026-11-28T10:00:04:000000"
VERSION = "1.38.0"
DESCRIPTION = "jobs: the index of the unfinished jobs replaces those of their status and agent"


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="kernel_jobs", description=DESCRIPTION)
    for column in ("status", "agent_id"):
        drop_column_index(manager, "tw_jobs", "Job", column, Varchar)
    run_ddl(
        manager,
        (
            "CREATE INDEX IF NOT EXISTS tw_jobs_unfinished ON tw_jobs (created_ms) "
            "WHERE status IN ('pending', 'processing')",
        ),
    )
    return manager
