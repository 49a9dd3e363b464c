# Tidewater — run `make help` for the list of targets.
# Two commands matter on a fresh machine:  `make demo`  and  `make test`.
SHELL := /bin/bash
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.tidewater-installed
PYTEST_ARGS ?=

.DEFAULT_GOAL := help

help: ## Show this help
	@awk 'BEGIN{FS=":.*## "; printf "Tidewater make targets:\n"} /^[a-zA-Z_-]+:.*## /{printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml constraints.txt
	@echo "… creating $(VENV) and installing Python packages (cached after the first run)"
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/pip install -q --upgrade pip
	@$(BIN)/pip install -q -c constraints.txt -e ".[dev]"
	@$(BIN)/python -c "import pyspark, delta, airflow, great_expectations, kafka" \
	  || { echo "tidewater: Python packages are inconsistent (import failed); see pip output above"; exit 1; }
	@touch $(STAMP)

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

test: setup ## Install everything and run the whole test suite (unit, spark, integration, e2e)
	@$(BIN)/pytest $(PYTEST_ARGS)

test-fast: setup ## Unit and Spark tests only
	@$(BIN)/pytest -m "unit or spark" $(PYTEST_ARGS)

lint: setup ## ruff + mypy + lint-imports (the layers: tidewater > jobs and services > lakehouse)
	@$(BIN)/ruff check .
	@$(BIN)/mypy tidewater lakehouse spark_jobs infra expectations
	@$(BIN)/lint-imports

bench: setup ## Full benchmark run, Flink peer included (74 min on 2 cores; writes benchmarks/results/)
	@$(BIN)/pip install -q -c constraints.txt -e ".[dev,bench]"
	@bash benchmarks/setup-flink.sh
	@$(BIN)/tidewater bench

bench-quick: setup ## Smoke-size benchmark run
	@$(BIN)/tidewater bench --quick

clean: down ## Stop services and delete local data (.tidewater/)
	@rm -rf .tidewater

.PHONY: help setup system-deps demo up down status test test-fast lint bench bench-quick clean
