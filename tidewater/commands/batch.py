"""``tidewater batch <p>``: write-audit-publish of the batch layer (``spark_jobs.batch.wap``), whole or a step at a time.

* ``--stage-only [--full]``: stage a run; the LAST stdout line is one JSON object
  ``{"run_id", "status", "staging_table", "windows", "deleted", "cutoff", "already_published"}``.
* ``--audit --run-id ID``: the ``staging`` suite on that run's staged rows, the verdict recorded with the run;
  the last line is ``{"run_id", "gate", "staging_version", "failures"}``; exit 1 when the suite fails.
* ``--publish --run-id ID``: publish that run once it holds a passing verdict on its rows (from ``--audit`` or
  ``tidewater check <p> --kind staging``); prints the stage's JSON object. Publishing a published run again
  writes no row, answers ``already_published: true`` and moves the serving view to the latest published
  cutoff if a failed refresh left it behind.
* no step flag: stage, audit and publish in one process, then the run's ledger.

Exit 3 (NothingToDo) when there is nothing to do: no bronze change, or a run superseded by a later one.
A publish that wrote the run's rows records the Asset events of ``batch.<p>`` and ``serving.<p>``
(``infra.services.airflow_assets``); under the DAG (``--by-dag``) the publish task's outlets record them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from infra.services.airflow_assets import record_publish
from infra.spark_session import get_spark
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.run_records import BatchRun
from spark_jobs.batch import bronze, wap
from spark_jobs.batch.job import refuse_in_kappa, run_line
from tidewater.commands import Subparsers, add_pipeline_arg, config_from, pipeline_from, progress
from tidewater.commands.quality import verdict_line

STEPS = ("stage_only", "audit", "publish")


def batch_precheck(args: argparse.Namespace) -> tuple[TidewaterConfig, Pipeline]:
    """The checks of ``tidewater batch`` that need no Spark: mode, flags, and an empty bronze table or,
    unless ``--full``, one with no commit since the last published run (exit 3 at once). The CLI runs
    them before it forwards the command to the job service; returns the config and the pipeline."""
    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    refuse_in_kappa(cfg, p)
    chosen = [f"--{step.replace('_', '-')}" for step in STEPS if getattr(args, step)]
    if len(chosen) > 1:
        raise TidewaterError(f"batch: {' and '.join(chosen)} exclude each other; stage first, then audit, then publish")
    if (args.publish or args.audit) and not args.run_id:
        raise TidewaterError(f"batch: {chosen[0]} needs --run-id RUN_ID (printed by 'tidewater batch <p> --stage-only')")
    if not (args.publish or args.audit):
        bronze.require_bronze_rows(cfg, p)
    if not (args.publish or args.audit or args.full):
        bronze.require_bronze_change(cfg, p)
    return cfg, p


def cmd_batch(args: argparse.Namespace) -> int:
    cfg, p = batch_precheck(args)
    spark = get_spark(cfg, f"tidewater-batch-{p.name}")
    full = " (full recompute)" if args.full else ""
    if args.stage_only:
        progress(f"staging a batch run of {p.name}{full} …")
        print(run_line(wap.stage(spark, cfg, p, args.full)), flush=True)
        return 0
    if args.audit:
        progress(f"auditing the staged rows of batch run {args.run_id} of {p.name} …")
        return print_audit(p, wap.audit(spark, cfg, p, args.run_id, build_docs=not args.no_docs))
    if args.publish:
        progress(f"publishing batch run {args.run_id} of {p.name} …")
        run = wap.publish(spark, cfg, p, args.run_id)
        print(run_line(run), flush=True)
    else:  # incremental or full is decided under the batch lock (a first run is full); the last line says which
        progress(f"running the batch layer for {p.name}{full} …")
        run = wap.run(spark, cfg, p, args.full)
        print(f"batch {p.name}: run {run.run_id} ({run.mode}) published {run.windows_written} windows "
              f"(deleted {run.windows_deleted}) up to cutoff {run.cutoff} from bronze v{run.bronze_version}, "
              f"{run.events_read} events read, {run.duration_ms / 1000:.1f}s", flush=True)
    if not run.already_published:
        announce(cfg, p, run, args.by_dag)
    return 0


def announce(cfg: TidewaterConfig, p: Pipeline, run: BatchRun, by_dag: bool) -> None:
    """The Asset events of a publish, recorded once: by the DAG's publish task (its outlets) or here."""
    if by_dag:
        progress("Asset events: recorded by the tidewater_batch DAG's publish task (its outlets)")
        return
    progress(record_publish(cfg, p.name, {"run_id": run.run_id, "bronze_version": run.bronze_version,
                                          "source": "tidewater batch"}))


def print_audit(p: Pipeline, staged: Any) -> int:
    """The audit's outcome, its verdict line and the JSON last line; exit 1 when the suite failed."""
    outcome = staged.outcome
    print(outcome.summary(), flush=True)
    print(verdict_line(p.name, outcome.table, staged.version, staged.run), flush=True)
    run = staged.run
    print(json.dumps({"run_id": run and run.run_id, "gate": run and run.gate, "staging_version": staged.version,
                      "failures": outcome.failures}), flush=True)
    return 0 if outcome.success else 1


def register(sub: Subparsers) -> None:
    p = sub.add_parser("batch", help="recompute exact windows from bronze, audit and publish them (lambda mode)")
    add_pipeline_arg(p)
    p.add_argument("--full", action="store_true", help="recompute every window (default: incremental)")
    p.add_argument("--stage-only", action="store_true", help="compute into staging only; print a JSON line")
    p.add_argument("--audit", action="store_true",
                   help="run the staging suite on the rows of the staged run given by --run-id; record its verdict")
    p.add_argument("--publish", action="store_true",
                   help="publish the staged run given by --run-id (once it holds a passing verdict)")
    p.add_argument("--run-id", help="run id printed by --stage-only")
    p.add_argument("--no-docs", action="store_true", help="with --audit: skip the Data Docs rebuild")
    p.add_argument("--by-dag", action="store_true",
                   help="run by the tidewater_batch DAG, whose publish task records the Asset events (its outlets)")
    p.set_defaults(handler=cmd_batch, precheck=batch_precheck)
