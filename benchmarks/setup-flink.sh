#!/usr/bin/env bash
# Scenario 6 (Flink peer) prerequisites, kept out of the main venv: apache-flink 2.2.1 pins
# pyarrow 16 / pandas 2.2 / apache-beam 2.61, which conflict with Tidewater's pins.
#  1. benchmarks/.venv-flink with apache-flink (PyPI)
#  2. the Flink SQL Kafka connector jar (Maven Central, profile `bench`) into .cache/jars/flink
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-python3.11}"
command -v "$PY" >/dev/null || PY=python3
if [ ! -x benchmarks/.venv-flink/bin/python ]; then
  echo "… creating benchmarks/.venv-flink (apache-flink, ~1 GB)"
  "$PY" -m venv benchmarks/.venv-flink
fi
benchmarks/.venv-flink/bin/pip install -q -r benchmarks/requirements-flink.txt
if ! ls .cache/jars/flink/flink-sql-connector-kafka-*.jar >/dev/null 2>&1; then
  echo "… fetching the Flink SQL Kafka connector with Maven (profile bench)"
  mvn -B -q -s infra/maven/settings.xml -f infra/pom.xml -P bench -pl maven/flink package
fi
echo "Flink peer ready: benchmarks/.venv-flink + $(ls .cache/jars/flink/)"
