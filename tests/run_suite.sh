#!/usr/bin/env bash
# `make test`'s pytest runs. With arguments: one pytest run with them (e.g. `make test PYTEST_ARGS="-m
# integration -x"`). Without: the whole suite, as two runs at once, each one module at a time.
# * Foreground: the e2e package, then the integration modules that load the machine (the soak, the quick
#   benchmark, kill -9, Kafka cluster faults, Kappa replay, random streams, ...). They never run beside each
#   other: the quick soak beside the e2e package could not recover its speed job (stop 39).
# * Beside it: the light integration modules (one broker, one driver, no load), then the fast tiers
#   (tests/spark, one local[1] JVM; tests/unit): about 8 min that the e2e package's waits on Airflow absorb. Their
#   report prints after the foreground's. The exit status fails if either run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
pytest=.venv/bin/pytest
if [ $# -gt 0 ]; then
  exec "$pytest" "$@"
fi
light=(test_catalog_across_processes test_flink_peer test_job_service test_kafka_broker test_kappa_replay_refusal
       test_missing_topic_and_java test_quality_suites test_standalone_cluster)
beside=() heavy=()
for module in tests/integration/test_*.py; do
  if [[ " ${light[*]} " == *" $(basename "$module" .py) "* ]]; then beside+=("$module"); else heavy+=("$module"); fi
done
# spark after the integration modules: its plain JVM (no Delta jars) must not be the one their sessions reuse
beside+=(tests/spark tests/unit)
fast_log=$(mktemp)
"$pytest" -p no:cacheprovider "${beside[@]}" > "$fast_log" 2>&1 &
fast=$!
"$pytest" tests/e2e "${heavy[@]}"
stack_status=$?
wait "$fast"
fast_status=$?
echo "── tests/unit, tests/spark and the light integration modules (ran beside the run above; exit $fast_status) ──"
cat "$fast_log"
rm -f "$fast_log"
echo "tests: stack-backed tiers exit $stack_status, fast tiers exit $fast_status"
[ "$stack_status" -eq 0 ] && [ "$fast_status" -eq 0 ]
