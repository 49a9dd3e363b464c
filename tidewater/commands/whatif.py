"""``tidewater whatif <pipeline> [--delays 30s,1m,2m,5m,10m] [--target 0.1%] [--chart PATH] [--json]``:
the watermark delay chosen from data (``spark_jobs.analysis.whatif``; docs/whatif.md).

Prints a table (or, with ``--json``, one JSON object: the report with a row per delay), writes a PNG chart
(default ``<data_dir>/reports/whatif-<p>.png``) and exits 0 when a delay keeps the missed events at most
at the target, 1 when none does, 3 when bronze holds no events yet, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.spark_session import get_spark
from lakehouse import naming
from lakehouse.errors import TidewaterError
from spark_jobs.analysis.whatif import BATCH_MODELS, analyse
from spark_jobs.analysis.whatif_chart import write_chart
from spark_jobs.analysis.whatif_report import format_table, parse_delays, parse_target
from tidewater.commands import Subparsers, add_pipeline_arg, config_from, pipeline_from


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def cmd_whatif(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    chart = Path(args.chart) if args.chart else naming.reports_dir(cfg) / f"whatif-{p.name}.png"
    report = analyse(get_spark(cfg, f"tidewater-whatif-{p.name}"), p, args.delays, args.target, args.batches,
                     cfg.spark.trigger_seconds)
    try:
        report["chart"] = str(write_chart(report, chart.resolve()))
    except OSError as exc:
        report["chart"] = None
        print(json.dumps(report) if args.json else format_table(report), flush=True)  # the figures are not lost
        raise TidewaterError(f"whatif: the chart could not be written to {chart} ({exc.strerror or exc}); "
                             "pass --chart PATH in a writable folder") from None
    print(json.dumps(report) if args.json else format_table(report), flush=True)
    return 0 if report["suggested_delay_seconds"] is not None else 1


def register(sub: Subparsers) -> None:
    p = sub.add_parser("whatif", help="replay bronze under candidate watermark delays: dropped events, wrong "
                                      "windows, finality; suggest the smallest delay within a target")
    add_pipeline_arg(p)
    p.add_argument("--delays", type=_typed(parse_delays), default=parse_delays("30s,1m,2m,5m,10m"),
                   help="candidate watermark delays, comma-separated, each in s, m or h (default 30s,1m,2m,5m,10m)")
    p.add_argument("--target", type=_typed(parse_target), default=parse_target("0.1%"),
                   help="the largest share of events a suggested delay may miss: 0.1%% (default) or 0.001")
    p.add_argument("--chart", help="where to write the PNG chart (default <data_dir>/reports/whatif-<p>.png)")
    p.add_argument("--batches", choices=BATCH_MODELS, default="recorded",
                   help="micro-batches as the speed job recorded them in bronze (default), or modelled from "
                        "arrival time with spark.trigger_seconds (a job that always keeps up)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(handler=cmd_whatif)
