#!/usr/bin/env bash
# Debian packages Tidewater needs. Idempotent: installs only what is missing.
#   java 17 with javac and jar (Spark, Kafka, Derby; infra/java's classes), mvn (fetches jars), chromium (browser test of the Airflow UI),
#   postgresql (airflow.database / metastore.backend: postgres, and the e2e tests that run on it).
set -euo pipefail
missing=()
{ command -v java && command -v javac && command -v jar; } >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
[ -x /usr/bin/chromium ] || missing+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "… installing Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
