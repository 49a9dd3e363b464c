"""``python -m benchmarks.bench [--quick|--size S] [--scenarios 1,2,...] [--batch-events N] [--many-modes M,...] [--keep-data]``:
the benchmark suite (``make bench``, ``make bench-quick``).

Runs on its own isolated stack (temp data folder, free ports) and writes JSON, Markdown and PNG
results to ``benchmarks/results/``. Exit status 1 if any scenario FAILED its correctness checks; a bad
argument is one ``tidewater: bench: ...`` line and exit 2.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.harness import SCENARIOS, run_benchmarks
from benchmarks.sizes import MANY_MODES
from benchmarks.stack import one_line_errors, stop_stack_on_term
from lakehouse.errors import TidewaterError


def parse_scenarios(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        numbers = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise TidewaterError(f"bench: --scenarios {text!r} is not a list of numbers; use e.g. --scenarios 1,2,5") from None
    bad = [n for n in numbers if n not in SCENARIOS]
    if bad or not numbers:
        raise TidewaterError(f"bench: unknown scenario(s) {bad or text!r}; scenarios are numbered "
                             f"{min(SCENARIOS)} to {max(SCENARIOS)}")
    return numbers


def many_modes(text: str) -> tuple[str, ...]:
    """argparse type: scenario 10's modes, comma-separated, each once."""
    modes = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    bad = [m for m in modes if m not in MANY_MODES]
    if bad or not modes:
        raise argparse.ArgumentTypeError(f"{text!r}: the modes are {', '.join(MANY_MODES)}; use e.g. shared,cluster")
    return modes


def positive_count(text: str) -> int:
    """argparse type: a whole number >= 1 (underscores allowed, as in 100_000_000)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; use e.g. 100000000") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is below 1; use e.g. 100000000")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench",
                                description="run the benchmark suite (writes benchmarks/results/)")
    p.add_argument("--quick", action="store_true", help="smoke sizes (what CI runs)")
    p.add_argument("--size", choices=["quick", "medium", "full"], default="full", help="data sizes (default full)")
    p.add_argument("--scenarios", help="comma-separated scenario numbers, e.g. 1,2 (default: all)")
    p.add_argument("--batch-events", type=positive_count, metavar="N",
                   help="scenario 3's bronze events instead of the size's (e.g. 100000000: incremental against "
                        "full as history grows)")
    p.add_argument("--many-modes", type=many_modes, metavar="M,...",
                   help=f"scenario 10's speed-layer modes instead of the size's ({', '.join(MANY_MODES)}; the quick "
                        "size runs shared only)")
    p.add_argument("--keep-data", action="store_true", help="keep the temporary data folder for inspection")
    return p


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    scenarios = parse_scenarios(args.scenarios)
    stop_stack_on_term("bench")
    size = "quick" if args.quick else args.size
    run = run_benchmarks(size, scenarios, keep_data=args.keep_data, batch_events=args.batch_events,
                         many_modes=args.many_modes)
    for r in run["results"]:
        print(f"{r['id']}. {r['name']:<38} {r['status']:<8} {r['ratios']}")
    print(f"results: {run['files']['markdown']}")
    return 0 if run["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
