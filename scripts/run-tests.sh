#!/usr/bin/env bash
# The whole suite as two runs side by side, one per core of a 2-core machine (a single pytest
# leaves the second core idle while it waits on PostgreSQL, subprocesses and browsers):
#   one: the tests marked `postgres` (each database-parametrised test's PostgreSQL case and
#        the PostgreSQL-only tests marked so), then the other tests of tests/runtime (fresh
#        clones, venvs and wheels: the longest tests, which share one `make wheels` per run);
#        a test that asks for `db_kind` "postgres" alone by `parametrize(..., indirect=True)`
#        carries no mark, and runs where its folder puts it;
#   two: every other test, then the TypeScript client's suite (`node --test` in
#        clients/typescript, against a real `tollway serve`; the Python client's suite is in
#        clients/tests, with the other tests of this run). The TypeScript suite ends this run,
#        not the first, because the first was the longer one (docs/testing.md has the figures).
# Each part prints its own report; the first run's parts follow the second's. Fails when any
# part fails. A snapshot file holds both databases' cases, so each part sees the other's
# snapshots as unused: they are reported as warnings, not failures.
set -u
cd "$(dirname "$0")/.."
export TOLLWAY_TEST_DATABASE_URL="${TOLLWAY_TEST_DATABASE_URL-postgres://postgres@127.0.0.1:5432/test}"
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 --snapshot-warn-unused)
first_log="$(mktemp)"
trap 'rm -f "$first_log"' EXIT
(
  "${PYTEST[@]}" -m postgres
  pg=$?
  "${PYTEST[@]}" -m "not postgres" tests/runtime
  runtime=$?
  echo "== parts: postgres exit $pg, tests/runtime (not postgres) exit $runtime =="
  [ "$pg" -eq 0 ] && [ "$runtime" -eq 0 ]
) >"$first_log" 2>&1 &
first=$!
echo "== every test not marked postgres outside tests/runtime, then the TypeScript client (the rest runs beside it) =="
"${PYTEST[@]}" -m "not postgres" --ignore=tests/runtime
rest=$?
echo "== the TypeScript client (clients/typescript: node --test) =="
(cd clients/typescript && npm test --silent)
typescript=$?
wait "$first"
first_rc=$?
echo "== the tests marked postgres, then tests/runtime's others =="
cat "$first_log"
echo "== runs: the rest exit $rest, clients/typescript exit $typescript, postgres + runtime exit $first_rc =="
[ "$rest" -eq 0 ] && [ "$typescript" -eq 0 ] && [ "$first_rc" -eq 0 ]
