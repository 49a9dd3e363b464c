"""``tidewater check <pipeline> [--kind K]``: the Great Expectations suites on a pipeline's tables.

``check`` validates each table kind's Delta table as a batch DataFrame with the versioned suites
(``expectations/gx``), prints every failing expectation, rebuilds the Data Docs and prints their
path. ``--kind staging`` audits the rows the latest staged batch run wrote and records the verdict with
that run, which a publish requires (``batch.wap.audit``, as ``tidewater batch <p> --audit`` does). The last stdout line is a JSON summary
(``failed`` kinds, ``failures`` per kind, ``verdict``: the staged run's recorded verdict). Exit 1 if a critical
expectation failed (a quarantine rate above the pipeline's ``quality.max_quarantine_rate`` among them).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from expectations.runner import validate_table
from infra.spark_session import get_spark
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.run_records import BatchRun
from lakehouse.speed_versions import active_version
from spark_jobs.batch.wap import audit
from spark_jobs.io.batch_runs import published_cutoff
from tidewater.commands import Subparsers, add_pipeline_arg, config_from, pipeline_from, progress

DEFAULT_KINDS = ("bronze", "quarantine", "speed", "batch", "serving")


def table_for(cfg: TidewaterConfig, pipeline: str, kind: str) -> str:
    """The table a suite kind validates (speed: the active version)."""
    if kind == "speed":
        return naming.speed_table(pipeline, active_version(cfg, pipeline))
    if kind == "staging":
        return naming.staging_table("batch", pipeline)
    return naming.table(kind, pipeline)


def cmd_check(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    kinds = args.kind or [k for k in DEFAULT_KINDS if not (k == "batch" and cfg.mode == "kappa")]
    spark = get_spark(cfg, f"tidewater-check-{p.name}")
    failed, docs, failures, verdict = [], "", {}, None
    for kind in kinds:
        table = args.table if args.table and len(kinds) == 1 else table_for(cfg, p.name, kind)
        if not spark.catalog.tableExists(table):
            if args.kind:
                print(f"FAILED {kind}: table {table} does not exist; run the job that writes it first")
                failed.append(kind)
            else:
                print(f"SKIPPED {kind}: table {table} does not exist yet")
            continue
        progress(f"validating {table} with suite {kind}.{p.name} …")
        if kind == "staging" and not args.table:
            staged = audit(spark, cfg, p, build_docs=not args.no_docs)
            outcome, verdict = staged.outcome, verdict_of(staged.run)
            print(verdict_line(p.name, table, staged.version, staged.run), flush=True)
        else:
            outcome = validate_table(cfg, p, kind, table, spark=spark, build_docs=not args.no_docs,
                                     read_cutoff=published_cutoff)
        print(outcome.summary().replace(f"\n  Data Docs: {outcome.docs}", ""), flush=True)
        docs = outcome.docs or docs
        if not outcome.success:
            failed.append(kind)
            failures[kind] = outcome.failures
    if docs:
        print(f"Data Docs: {docs}")
    print(json.dumps({"pipeline": p.name, "kinds": kinds, "failed": failed, "failures": failures, "docs": docs,
                      "verdict": verdict}))
    return 1 if failed else 0


def verdict_of(run: BatchRun | None) -> dict[str, Any] | None:
    return None if run is None else {"run_id": run.run_id, "gate": run.gate, "staging_version": run.gated_version}


def verdict_line(pipeline: str, table: str, version: int, run: BatchRun | None) -> str:
    if run is None:
        return (f"NOT RECORDED: no staged run of {pipeline} waiting to be published wrote {table} v{version}; "
                f"stage one with 'tidewater batch {pipeline} --stage-only', then check it")
    return f"verdict '{run.gate}' recorded for run {run.run_id} on {table} v{version}"


def register(sub: Subparsers) -> None:
    p = sub.add_parser("check", help="run the Great Expectations suites on a pipeline's tables; build Data Docs")
    add_pipeline_arg(p)
    p.add_argument("--kind", action="append", choices=["bronze", "quarantine", "speed", "batch", "staging", "serving"],
                   help="suite(s) to run (repeatable; default: bronze, quarantine, speed, batch, serving)")
    p.add_argument("--table", help="validate this table instead of the kind's default (with one --kind)")
    p.add_argument("--no-docs", action="store_true", help="skip the Data Docs rebuild")
    p.set_defaults(handler=cmd_check)
