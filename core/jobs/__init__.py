"""Asynchronous jobs: the job row, running, waiting for payment, parked jobs, notifications and an agent's reads of them."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("agent_reads", "job_payments", "job_runner", "jobs", "notifications", "parked", "read_routes")
