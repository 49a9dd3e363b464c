"""``tidewater maintenance [--only tables|ops|checkpoints] [--dry-run]``: Delta housekeeping.

OPTIMIZE + VACUUM of every layer table, ``ops.*`` retention and clean-up of retired speed-query
checkpoints (``spark_jobs.maintenance.job``). Prints one JSON report; a table that could not be maintained
is named in it (``error``) and the exit status is 1, after every other table was maintained.
"""

from __future__ import annotations

import argparse
import json

from infra.spark_session import get_spark
from lakehouse.pipeline import available_pipelines
from spark_jobs.maintenance import job as maintenance
from tidewater.commands import Subparsers, config_from, progress


def cmd_maintenance(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    parts = args.only or ["tables", "ops", "checkpoints"]
    maintenance.require_safe_retention(args.retention_hours)  # refuse before any Spark start
    maintenance.require_ops_retention(args.ops_retention_days)
    report: dict[str, object] = {"dry_run": args.dry_run}
    tables: list[dict[str, object]] = []
    if "checkpoints" in parts:
        report["checkpoints_removed"] = maintenance.clean_checkpoints(cfg, available_pipelines(), args.dry_run)
    if {"tables", "ops"} & set(parts):
        spark = get_spark(cfg, "tidewater-maintenance")
        if "ops" in parts:
            progress(f"deleting ops rows older than {args.ops_retention_days} days …")
            report["ops_rows_deleted"] = maintenance.ops_retention(spark, args.ops_retention_days, args.dry_run)
        if "tables" in parts:
            progress(f"OPTIMIZE + VACUUM (retain {args.retention_hours} h) …")
            report["tables"] = tables = maintenance.optimize_and_vacuum(spark, args.retention_hours, args.dry_run)
    print(json.dumps(report, default=str))
    failed = [row for row in tables if "error" in row]
    for row in failed:
        progress(f"maintenance: {row['table']} failed after {row['attempts']} attempt(s): {row['error']}")
    return 1 if failed else 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser("maintenance", help="Delta OPTIMIZE/VACUUM, ops retention, retired checkpoint clean-up")
    p.add_argument("--only", action="append", choices=["tables", "ops", "checkpoints"], help="run only these parts")
    p.add_argument("--retention-hours", type=int, default=168, help="VACUUM retention (>= 168)")
    p.add_argument("--ops-retention-days", type=int, default=30, help="keep ops.* rows this many days")
    p.add_argument("--dry-run", action="store_true", help="report what would be removed, change nothing")
    p.set_defaults(handler=cmd_maintenance)
