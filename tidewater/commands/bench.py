"""``tidewater bench [--quick|--size S] [--scenarios 1,2,...] [--batch-events N]``: the benchmark suite (benchmarks/).

Runs on its own isolated stack (temp data folder, free ports) and writes JSON, Markdown and PNG
results to ``benchmarks/results/``. Exit status 1 if any scenario FAILED its correctness checks.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from pathlib import Path
from typing import Any

from lakehouse.errors import TidewaterError
from tidewater.commands import Subparsers


def parse_scenarios(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        numbers = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise TidewaterError(f"bench: --scenarios {text!r} is not a list of numbers; use e.g. --scenarios 1,2,5") from None
    from benchmarks.harness import SCENARIOS

    bad = [n for n in numbers if n not in SCENARIOS]
    if bad or not numbers:
        raise TidewaterError(f"bench: unknown scenario(s) {bad or text!r}; scenarios are numbered "
                             f"{min(SCENARIOS)} to {max(SCENARIOS)}")
    return numbers


def positive_count(text: str) -> int:
    """argparse type: a whole number >= 1 (underscores allowed, as in 100_000_000)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; use e.g. 100000000") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is below 1; use e.g. 100000000")
    return value


def benchmarks_module(name: str, command: str) -> Any:
    """``benchmarks.<name>`` for ``tidewater <command>``, or one line saying what is missing."""
    repo = str(Path(__file__).resolve().parents[2])
    if repo not in sys.path:  # benchmarks/ lives next to the packages, not inside the installed ones
        sys.path.insert(0, repo)
    try:
        return importlib.import_module(f"benchmarks.{name}")
    except ModuleNotFoundError as exc:
        raise TidewaterError(f"{command}: {exc.name} is missing; run from the repository root with '.[bench]' "
                             "installed (pip install -e '.[dev,bench]')") from None


def stop_stack_on_term(command: str) -> None:
    """SIGTERM ends ``command`` as Ctrl-C does: its ``finally`` blocks stop its isolated stack (brokers,
    metastore, jobs) and delete its temp folder, instead of leaving them running."""
    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(f"tidewater: {command} stopped by signal {signum}")

    signal.signal(signal.SIGTERM, stop)


def cmd_bench(args: argparse.Namespace) -> int:
    harness = benchmarks_module("harness", "bench")
    stop_stack_on_term("bench")
    size = "quick" if args.quick else args.size
    run = harness.run_benchmarks(size, parse_scenarios(args.scenarios), keep_data=args.keep_data,
                                 batch_events=args.batch_events)
    for r in run["results"]:
        print(f"{r['id']}. {r['name']:<38} {r['status']:<8} {r['ratios']}")
    print(f"results: {run['files']['markdown']}")
    return 0 if run["ok"] else 1


def register(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="run the benchmark suite (writes benchmarks/results/)")
    p.add_argument("--quick", action="store_true", help="smoke sizes (what CI runs)")
    p.add_argument("--size", choices=["quick", "medium", "full"], default="full", help="data sizes (default full)")
    p.add_argument("--scenarios", help="comma-separated scenario numbers, e.g. 1,2 (default: all)")
    p.add_argument("--batch-events", type=positive_count, metavar="N",
                   help="scenario 3's bronze events instead of the size's (e.g. 100000000: incremental against "
                        "full as history grows)")
    p.add_argument("--keep-data", action="store_true", help="keep the temporary data folder for inspection")
    p.set_defaults(handler=cmd_bench)
