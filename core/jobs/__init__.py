"""Asynchronous jobs: the job row, running, waiting for payment, parked jobs, notifications, and the free reads of an agent's things (job status, receipts, notifications, health)."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = (
    "agent_reads",
    "cancel",
    "job_events",
    "job_payments",
    "job_runner",
    "jobs",
    "migrations",
    "notifications",
    "parked",
    "read_routes",
    "tables",
)
