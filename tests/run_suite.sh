#!/usr/bin/env bash
# `make test`'s pytest runs. With arguments: one pytest run with them (e.g. `make test PYTEST_ARGS="-m
# integration -x"`). Without: the whole suite in two phases, each pytest run one module at a time.
# * Phase 1, two lanes at once (each its own pytest process and isolated stacks):
#   - lane A: the e2e package (its waits on Airflow leave a core idle), Kappa replay, the speed layer, the
#     operation sequence;
#   - lane B: the light integration modules (one broker, one driver), the one-stack modules (JDBC, BI security,
#     the listener review, incremental batch, random streams, Kafka cluster faults, the kill -9 tests of a speed job and of the shared speed host), then `tests/spark` (one local[1] JVM) and
#     `tests/unit`. A later module's Delta session once started on tests/spark's plain JVM (no Delta
#     jars; JDBC after it failed 8 of its 9 tests): its conftest ends that JVM (tests/spark is
#     a package, so its package-scoped session ends with it), and it runs last anyway.
# * Phase 2, alone: the quick benchmark and the quick soak, which load both cores on purpose (the quick
#   soak beside the e2e package could not recover its speed job).
# Lane B's and phase 2's reports print after lane A's. The exit status fails if any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
pytest=.venv/bin/pytest
if [ $# -gt 0 ]; then
  exec "$pytest" "$@"
fi
it=tests/integration
lane_a=(tests/e2e "$it/test_kappa_replay.py" "$it/test_speed_layer.py" "$it/test_operation_sequence.py")
lane_b=("$it/test_catalog_across_processes.py" "$it/test_delta_log_cleanup.py" "$it/test_flink_peer.py" "$it/test_job_service.py"
        "$it/test_kafka_broker.py" "$it/test_kappa_replay_refusal.py" "$it/test_missing_topic_and_java.py"
        "$it/test_install_lock.py" "$it/test_quality_suites.py" "$it/test_stack_lock.py" "$it/test_standalone_cluster.py"
        "$it/test_jdbc.py" "$it/test_bi_security.py" "$it/test_listener_security.py" "$it/test_batch_incremental.py" "$it/test_publish_view.py" "$it/test_publish_gate.py"
        "$it/test_random_streams.py" "$it/test_kafka_cluster.py" "$it/test_speed_crash.py" "$it/test_speed_host.py" tests/spark tests/unit)
alone=("$it/test_bench_quick.py" "$it/test_soak_quick.py")
listed=" ${lane_a[*]} ${lane_b[*]} ${alone[*]} "
for module in "$it"/test_*.py; do  # a new module must be placed in a lane, never silently skipped
  if [[ "$listed" != *" $module "* ]]; then
    echo "tests/run_suite.sh: $module is in no lane; add it to lane_a, lane_b or alone" >&2
    exit 2
  fi
done
started=$SECONDS
b_log=$(mktemp)
( "$pytest" -p no:cacheprovider "${lane_b[@]}"; status=$?; echo "lane B took $((SECONDS - started)) s"; exit $status ) > "$b_log" 2>&1 &
b_pid=$!
"$pytest" "${lane_a[@]}"
a_status=$?
a_took=$((SECONDS - started))
wait "$b_pid"
b_status=$?
echo "── lane B: the light integration modules, JDBC, incremental batch, random streams, Kafka cluster, then"
echo "   tests/spark and tests/unit (ran beside the run above; exit $b_status) ──"
cat "$b_log"
rm -f "$b_log"
phase_1_took=$((SECONDS - started))
echo "── phase 2, alone: the quick benchmark and the quick soak ──"
"$pytest" -p no:cacheprovider "${alone[@]}"
alone_status=$?
echo "tests: lane A exit $a_status after $a_took s; lane B exit $b_status; phase 1 took $phase_1_took s," \
     "phase 2 exit $alone_status after $((SECONDS - started - phase_1_took)) s"
[ "$a_status" -eq 0 ] && [ "$b_status" -eq 0 ] && [ "$alone_status" -eq 0 ]
