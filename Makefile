# Tidewater — run `make help` for the list of targets.
# Two commands matter on a fresh machine:  `make demo`  and  `make test`.
SHELL := /bin/bash
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.tidewater-installed
BI_VENV := .venv-bi
BI_STAMP := $(BI_VENV)/.tidewater-installed
PYTEST_ARGS ?=
# the bench extras in a variable: a comma written inside $(call ...) would split its arguments
BENCH_PACKAGES := -c constraints.txt -e ".[dev,bench]"
SOAK_ARGS ?=

.DEFAULT_GOAL := help

help: ## Show this help
	@awk 'BEGIN{FS=":.*## "; printf "Tidewater make targets:\n"} /^[a-zA-Z_-]+:.*## /{printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# Installs into the virtualenv whose bin folder is $(1): uv (pinned: UV_VERSION), which downloads in parallel
# (the .venv install took 41 s against pip's 140 s on a cold cache, same versions); pip if uv fails.
# UV_NATIVE_TLS: uv trusts the system's certificates, as pip does here (PIP_CERT).
UV_VERSION := 0.13.9
define pip_install
$(1)/pip install -q --disable-pip-version-check uv==$(UV_VERSION) \
  && UV_NATIVE_TLS=1 $(1)/uv pip install -q --python $(1)/python $(2) \
  || { echo "… uv failed; installing with pip instead"; $(1)/pip install -q --upgrade pip && $(1)/pip install -q $(2); }
endef

# The two installs run under a lock (flock on <venv>.lock), in a second make that checks the stamp again once
# it holds it: two commands started together on a fresh clone (make demo and make test) install in turn, and
# the second finds the first one's install done. The import check is quiet unless it fails (importing
# great_expectations after airflow logs a hundred INFO lines).
ifdef TIDEWATER_INSTALL_LOCKED
$(STAMP): pyproject.toml constraints.txt
	@echo "… creating $(VENV) and installing Python packages (cached after the first run)"
	@test -x $(BIN)/pip || $(PY) -m venv $(VENV)
	@$(call pip_install,$(BIN),-c constraints.txt -e ".[dev]")
	@$(BIN)/python -c "$(VENV_IMPORTS)" >/dev/null 2>&1 || { $(BIN)/python -c "$(VENV_IMPORTS)"; \
	  echo "tidewater: Python packages are inconsistent (import failed); see pip output above"; exit 1; }
	@touch $(STAMP)

$(BI_STAMP): infra/superset/constraints.txt
	@echo "… creating $(BI_VENV) for Apache Superset (its own pins: SQLAlchemy < 2; about a minute the first time)"
	@test -x $(BI_VENV)/bin/pip || $(PY) -m venv $(BI_VENV)
	@$(call pip_install,$(BI_VENV)/bin,-c infra/superset/constraints.txt "apache-superset[spark]" rich cachetools)
	@$(BI_VENV)/bin/python -c "$(BI_IMPORTS)" >/dev/null 2>&1 || { $(BI_VENV)/bin/python -c "$(BI_IMPORTS)"; \
	  echo "tidewater: $(BI_VENV) is inconsistent (import failed); see pip output above"; exit 1; }
	@touch $(BI_STAMP)
else
$(STAMP): pyproject.toml constraints.txt
	@flock $(VENV).lock $(MAKE) -s --no-print-directory TIDEWATER_INSTALL_LOCKED=1 $(STAMP)

$(BI_STAMP): infra/superset/constraints.txt
	@flock $(BI_VENV).lock $(MAKE) -s --no-print-directory TIDEWATER_INSTALL_LOCKED=1 $(BI_STAMP)
endif
VENV_IMPORTS := import pyspark, delta, airflow, great_expectations, kafka
BI_IMPORTS := import superset.cli.main, pyhive.sqlalchemy_hive, thrift_sasl, gunicorn

bi-venv: $(BI_STAMP) ## Install Apache Superset into its own virtualenv .venv-bi (pinned)

bi: setup bi-venv ## Superset on 127.0.0.1 with the sensor_readings dashboard (starts the stack if needed)
	@TIDEWATER_BI_ENABLED=true $(BIN)/tidewater up

setup: $(STAMP) system-deps ## Install everything: venv + pinned packages, JVM jars via Maven, system packages
	@$(BIN)/tidewater setup

system-deps: ## Install Debian packages the stack needs if missing (Java 17, Maven, Chromium for UI tests)
	@bash infra/install_system_deps.sh

demo: setup ## Bring the local stack up and run the demo (produce -> speed -> batch -> serving -> reconcile)
	@$(BIN)/python -m tidewater.demo

up: setup ## Start the local stack (metastore, Kafka, Thrift server, Airflow)
	@$(BIN)/tidewater up

down: ## Stop everything `up` and the jobs started
	@$(BIN)/tidewater down

status: ## Health of every local service
	@$(BIN)/tidewater status

# setup's Java work (Maven, the class-data-sharing archives) and the Superset virtualenv's downloads overlap
test: ## Install everything and run the whole test suite (unit, spark, integration, e2e)
	@$(MAKE) --no-print-directory -j2 setup bi-venv
	@bash tests/run_suite.sh $(PYTEST_ARGS)

test-fast: setup ## Unit and Spark tests only
	@$(BIN)/pytest -m "unit or spark" $(PYTEST_ARGS)

lint: setup ## ruff + mypy + lint-imports (the layers: tidewater > jobs and services > lakehouse) + no import cycles + imports at module top + history check
	@$(BIN)/ruff check .
	@$(BIN)/mypy tidewater lakehouse spark_jobs infra expectations tests dags benchmarks
	@$(BIN)/lint-imports
	@$(BIN)/python -m tests.import_cycles
	@$(BIN)/python -m tests.in_function_imports
	@$(BIN)/python -m tests.history_references

bench: setup ## Full benchmark run, Flink peer included (about 90 min on 2 cores; writes benchmarks/results/)
	@$(call pip_install,$(BIN),$(BENCH_PACKAGES))
	@bash benchmarks/setup-flink.sh
	@$(BIN)/python -m benchmarks.bench

bench-quick: setup ## Smoke-size benchmark run
	@$(BIN)/python -m benchmarks.bench --quick

soak: setup ## Chaos soak: 30 min at 2,000 events/s on 3 brokers, kill -9 of 4 components (writes benchmarks/results/)
	@$(call pip_install,$(BIN),$(BENCH_PACKAGES))
	@$(BIN)/python -m benchmarks.soak $(SOAK_ARGS)

CHAOS_ARGS ?=
chaos: setup ## Operation-sequence chaos run: 300 seeded operations over every pipeline in both modes (writes benchmarks/results/)
	@$(BIN)/python -m benchmarks.chaos $(CHAOS_ARGS)

clean: down ## Stop services and delete local data (.tidewater/)
	@rm -rf .tidewater

.PHONY: help setup bi-venv bi system-deps demo up down status test test-fast lint bench bench-quick soak chaos clean
