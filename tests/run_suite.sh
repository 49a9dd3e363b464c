#!/usr/bin/env bash
# `make test`'s pytest runs. With arguments: one pytest run with them (e.g. `make test PYTEST_ARGS="-m
# integration -x"`). Without: the whole suite, as two runs at once. The stack-backed tiers (tests/e2e,
# tests/integration) run one module at a time in the foreground: their soak and crash tests need the
# machine to themselves. The fast tiers (tests/unit, and tests/spark's single local[1] JVM; about 4 min)
# run beside them and print after them. The exit status fails if either run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
pytest=.venv/bin/pytest
if [ $# -gt 0 ]; then
  exec "$pytest" "$@"
fi
fast_log=$(mktemp)
"$pytest" -p no:cacheprovider tests/unit tests/spark > "$fast_log" 2>&1 &
fast=$!
"$pytest" tests/e2e tests/integration
stack_status=$?
wait "$fast"
fast_status=$?
echo "── tests/unit and tests/spark (ran beside the run above; exit $fast_status) ──"
cat "$fast_log"
rm -f "$fast_log"
echo "tests: stack-backed tiers exit $stack_status, fast tiers exit $fast_status"
[ "$stack_status" -eq 0 ] && [ "$fast_status" -eq 0 ]
