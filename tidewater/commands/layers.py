"""``tidewater serving|replay|reconcile|sql``: the serving view, Kappa replay, the ledger, SQL
(``tidewater batch``: ``tidewater/commands/batch.py``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from infra.spark_session import get_spark
from lakehouse.errors import NothingToDo, TidewaterError
from spark_jobs.batch.reconcile import ensure_ledger, summary
from spark_jobs.replay import job as replay
from spark_jobs.shared.serving_view import refresh_view
from spark_jobs.transforms.reconcile import format_summary
from tidewater.commands import Subparsers, add_pipeline_arg, config_from, pipeline_from, progress


def _spark(cfg: Any, app: str) -> Any:
    return get_spark(cfg, app)


def cmd_serving(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    ddl = refresh_view(_spark(cfg, "tidewater-serving"), cfg, p)
    print(ddl if args.show_sql else f"serving.{p.name}: view re-created ({cfg.mode} mode)")
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    """Record the ledger of the published run (``--run-id``, else the latest) if it has none yet,
    then print the summary. With no published run and no ``--run-id``, only the summary."""
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
    print(json.dumps(dataclasses.asdict(out)))
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
