#!/usr/bin/env bash
# `make test`'s pytest runs. With arguments: one pytest run with them (e.g. `make test PYTEST_ARGS="-m
# integration -x"`). Without: the whole suite in two phases, each pytest run one module at a time.
# * Phase 1, two lanes at once (each its own pytest process and isolated stacks):
#   - lane A: the e2e package (its waits on Airflow leave a core idle), the kill -9 test, Kappa replay, the
#     speed layer;
#   - lane B: the light integration modules (one broker, one driver), `tests/spark` (one local[1] JVM, after
#     the integration modules: its plain JVM must not be the one their Delta sessions reuse), `tests/unit`,
#     then the one-stack modules: JDBC, incremental batch, random streams, Kafka cluster faults.
# * Phase 2, alone: the quick benchmark and the quick soak, which load both cores on purpose (the quick
#   soak beside the e2e package could not recover its speed job, stop 39).
# Lane B's and phase 2's reports print after lane A's. The exit status fails if any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
pytest=.venv/bin/pytest
if [ $# -gt 0 ]; then
  exec "$pytest" "$@"
fi
it=tests/integration
lane_a=(tests/e2e "$it/test_speed_crash.py" "$it/test_kappa_replay.py" "$it/test_speed_layer.py")
lane_b=("$it/test_catalog_across_processes.py" "$it/test_flink_peer.py" "$it/test_job_service.py"
        "$it/test_kafka_broker.py" "$it/test_kappa_replay_refusal.py" "$it/test_missing_topic_and_java.py"
        "$it/test_quality_suites.py" "$it/test_standalone_cluster.py" tests/spark tests/unit
        "$it/test_jdbc.py" "$it/test_batch_incremental.py" "$it/test_random_streams.py"
        "$it/test_kafka_cluster.py")
alone=("$it/test_bench_quick.py" "$it/test_soak_quick.py")
listed=" ${lane_a[*]} ${lane_b[*]} ${alone[*]} "
for module in "$it"/test_*.py; do  # a new module must be placed in a lane, never silently skipped
  if [[ "$listed" != *" $module "* ]]; then
    echo "tests/run_suite.sh: $module is in no lane; add it to lane_a, lane_b or alone" >&2
    exit 2
  fi
done
b_log=$(mktemp)
"$pytest" -p no:cacheprovider "${lane_b[@]}" > "$b_log" 2>&1 &
b_pid=$!
"$pytest" "${lane_a[@]}"
a_status=$?
wait "$b_pid"
b_status=$?
echo "── lane B: the light integration modules, tests/spark, tests/unit, then JDBC, incremental batch, random"
echo "   streams, Kafka cluster (ran beside the run above; exit $b_status) ──"
cat "$b_log"
rm -f "$b_log"
echo "── phase 2, alone: the quick benchmark and the quick soak ──"
"$pytest" -p no:cacheprovider "${alone[@]}"
alone_status=$?
echo "tests: lane A exit $a_status, lane B exit $b_status, phase 2 exit $alone_status"
[ "$a_status" -eq 0 ] && [ "$b_status" -eq 0 ] && [ "$alone_status" -eq 0 ]
