"""``tidewater batch|serving|replay|reconcile|sql``: the batch layer, serving view, Kappa replay, SQL.

``tidewater batch <p> [--full] --stage-only`` prints, as its LAST stdout line, one JSON object
``{"run_id", "status", "staging_table", "windows", "deleted", "cutoff", "already_published"}``;
``tidewater batch <p> --publish --run-id ID`` publishes that staged run once ``tidewater check <p> --kind
staging`` recorded a passing verdict on its rows, and prints the same object (publishing a published run
again writes no row, answers ``already_published: true`` and moves the serving view to the latest published
cutoff if a failed refresh left it behind). Plain ``tidewater batch <p>`` stages, validates and publishes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lakehouse.errors import TidewaterError
from tidewater.commands import Subparsers, add_pipeline_arg, config_from, pipeline_from, progress


def _spark(cfg: Any, app: str) -> Any:
    from infra.spark_session import get_spark

    return get_spark(cfg, app)


def batch_precheck(args: argparse.Namespace) -> tuple[Any, Any]:
    """The checks of ``tidewater batch`` that need no Spark: mode, flags, and an empty bronze table or,
    unless ``--full``, one with no commit since the last published run (exit 3 at once). The CLI runs
    them before it forwards the command to the job service; returns the config and the pipeline."""
    from spark_jobs.batch import bronze as batch_bronze
    from spark_jobs.batch import job as batch

    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    batch.refuse_in_kappa(cfg, p)
    if args.publish and not args.run_id:
        raise TidewaterError("batch: --publish needs --run-id RUN_ID (printed by 'tidewater batch <p> --stage-only')")
    if args.publish and args.stage_only:
        raise TidewaterError("batch: --stage-only and --publish exclude each other; stage first, then publish")
    if not args.publish:
        batch_bronze.require_bronze_rows(cfg, p)
    if not args.publish and not args.full:
        batch_bronze.require_bronze_change(cfg, p)
    return cfg, p


def cmd_batch(args: argparse.Namespace) -> int:
    from spark_jobs.batch import job as batch

    cfg, p = batch_precheck(args)
    spark = _spark(cfg, f"tidewater-batch-{p.name}")
    if args.stage_only:
        progress(f"staging a batch run of {p.name}{' (full recompute)' if args.full else ''} …")
        print(batch.run_line(batch.stage(spark, cfg, p, args.full)), flush=True)
        return 0
    if args.publish:
        progress(f"publishing batch run {args.run_id} of {p.name} …")
        from spark_jobs.batch.publish import publish

        print(batch.run_line(publish(spark, cfg, p, args.run_id)), flush=True)
        return 0
    # incremental or full is decided under the batch lock (a first run is full); the last line says which
    progress(f"running the batch layer for {p.name}{' (full recompute)' if args.full else ''} …")
    run = batch.run(spark, cfg, p, args.full)
    print(f"batch {p.name}: run {run['run_id']} ({run['mode']}) published {run['windows_written']} windows "
          f"(deleted {run['windows_deleted']}) up to cutoff {run['cutoff']} from bronze v{run['bronze_version']}, "
          f"{run['events_read']} events read, {run['duration_ms'] / 1000:.1f}s", flush=True)
    from infra.services.airflow_assets import record_publish

    # the DAG's publish task records these events itself (its outlets); it runs '--publish', never this
    progress(record_publish(cfg, p.name, {"run_id": run["run_id"], "bronze_version": int(run["bronze_version"]),
                                          "source": "tidewater batch"}))
    return 0


def cmd_serving(args: argparse.Namespace) -> int:
    from spark_jobs.shared.serving_view import refresh_view

    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    ddl = refresh_view(_spark(cfg, "tidewater-serving"), cfg, p)
    print(ddl if args.show_sql else f"serving.{p.name}: view re-created ({cfg.mode} mode)")
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    """Record the ledger of the published run (``--run-id``, else the latest) if it has none yet,
    then print the summary. With no published run and no ``--run-id``, only the summary."""
    from lakehouse.errors import NothingToDo
    from spark_jobs.batch.reconcile import ensure_ledger, summary
    from spark_jobs.transforms.reconcile import format_summary

    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    spark = _spark(cfg, "tidewater-reconcile")
    try:
        ledger: dict[str, Any] | None = ensure_ledger(spark, cfg, p, args.run_id)
    except NothingToDo:
        if args.run_id:
            raise
        ledger = None
    s = {**summary(spark, p), "ledger": ledger}
    print(json.dumps(s, default=str) if args.json else format_summary(p.name, s))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from spark_jobs.replay import job as replay
    from spark_jobs.shared.serving_view import refresh_view

    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    holder: dict[str, Any] = {}

    def refresh(version: int) -> None:
        if "spark" not in holder:  # not setdefault: its argument, a second getOrCreate, would log a warning
            holder["spark"] = _spark(cfg, "tidewater-replay")
        refresh_view(holder["spark"], cfg, p, speed_version=version)

    def prepare() -> None:  # under the switch lock: a second replay at once is refused before its Spark start
        if "spark" not in holder:
            holder["spark"] = _spark(cfg, "tidewater-replay")

    if args.rollback:
        out = replay.rollback(cfg, p, refresh, prepare=prepare)
    else:
        replay.check_history(cfg, p)  # before any Spark start: refuse fast, change nothing
        out = replay.replay(cfg, p, refresh, timeout=args.timeout, log=progress, prepare=prepare)
    print(json.dumps(out))
    return 0


def render_table(columns: list[str], rows: list[tuple[Any, ...]], limit: int) -> str:
    cells = [[("NULL" if v is None else str(v)) for v in row] for row in rows[:limit]]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    line = "+".join("-" * (w + 2) for w in widths)
    out = [" | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)), line]
    out += [" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''}{', shown ' + str(limit) if len(rows) > limit else ''})")
    return "\n".join(out)


def cmd_sql(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    spark = _spark(cfg, "tidewater-sql")
    try:
        df = spark.sql(args.query)
    except Exception as exc:  # AnalysisException / ParseException: one line, not a JVM trace
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise TidewaterError(f"sql: {first}") from None
    rows = [tuple(r) for r in df.limit(args.limit + 1).collect()]
    print(render_table(df.columns, rows, args.limit))
    return 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser("batch", help="recompute exact windows from bronze and publish them (lambda mode)")
    add_pipeline_arg(p)
    p.add_argument("--full", action="store_true", help="recompute every window (default: incremental)")
    p.add_argument("--stage-only", action="store_true", help="compute into staging only; print a JSON line")
    p.add_argument("--publish", action="store_true",
                   help="publish the staged run given by --run-id (once 'tidewater check <p> --kind staging' passed it)")
    p.add_argument("--run-id", help="run id printed by --stage-only")
    p.set_defaults(handler=cmd_batch, precheck=batch_precheck)
    p = sub.add_parser("serving", help="manage the serving view")
    p.add_argument("action", choices=["refresh"])
    add_pipeline_arg(p)
    p.add_argument("--show-sql", action="store_true", help="print the view's DDL")
    p.set_defaults(handler=cmd_serving)
    p = sub.add_parser("reconcile", help="speed vs batch: exact share, largest errors, causes")
    add_pipeline_arg(p)
    p.add_argument("--run-id", help="the published run whose ledger to record (default: the latest)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_reconcile)
    p = sub.add_parser("replay", help="rebuild the speed table from the Kafka log into a new version (kappa)")
    add_pipeline_arg(p)
    p.add_argument("--rollback", action="store_true", help="switch back to the previous version")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the replay to catch up")
    p.set_defaults(handler=cmd_replay)
    p = sub.add_parser("sql", help="run Spark SQL against the Tidewater catalog and print a table")
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=100)
    p.set_defaults(handler=cmd_sql)
