#!/usr/bin/env bash
# Make sure the machine's PostgreSQL answers on 127.0.0.1:5432 before the suite
# runs its PostgreSQL tests (docs/architecture.md, "Tests"). Starts the local cluster if needed.
set -u
answers() { (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }
answers && exit 0
if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  for _ in $(seq 1 30); do answers && exit 0; sleep 1; done
fi
echo "PostgreSQL does not answer on 127.0.0.1:5432; the PostgreSQL tests will fail." >&2
exit 0
