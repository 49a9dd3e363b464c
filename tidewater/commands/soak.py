"""``tidewater soak [--quick] [--minutes M] [--rate R] [--seed S] [--out DIR]``: the chaos soak (benchmarks/soak.py).

Runs on its own isolated stack (temp data folder, free ports, 3 brokers, Airflow) and writes JSON,
Markdown and a PNG chart to ``benchmarks/results/`` (or ``--out``). Exit status 1 with a one-line
reason if any check failed (exactly once, serving = oracle, a fault not recovered, flatness).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from lakehouse.errors import TidewaterError
from tidewater.commands import Subparsers
from tidewater.commands.bench import benchmarks_module, stop_stack_on_term


def cmd_soak(args: argparse.Namespace) -> int:
    soak = benchmarks_module("soak", "soak")
    if (args.minutes is not None and args.minutes <= 0) or (args.rate is not None and args.rate <= 0):
        raise TidewaterError("soak: --minutes and --rate must be positive")
    stop_stack_on_term("soak")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    settings = soak.settings_for(args.quick, args.minutes, args.rate)
    print(f"soak: seed {seed}, {settings.rate} events/s for {settings.seconds} s (reproduce the fault plan with "
          f"--seed {seed})", flush=True)
    run = soak.run_soak(settings, seed, Path(args.out) if args.out else soak.RESULTS, keep_data=args.keep_data)
    print(f"results: {run['files']['markdown']}")
    if not run["ok"]:
        print(f"tidewater: soak {run['reason']}", file=sys.stderr)
        return 1
    print("soak: every check passed")
    return 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser("soak", help="chaos soak on an isolated 3-broker stack (writes benchmarks/results/)")
    p.add_argument("--quick", action="store_true", help="3 minutes at 1,000 events/s, each fault once, flatness not gating (CI)")
    p.add_argument("--minutes", type=float, help="how long the producer sends (default 30; quick 3)")
    p.add_argument("--rate", type=int, help="events per second (default 2000; quick 1000)")
    p.add_argument("--seed", type=int, help="seed of the fault plan (default: a new one, printed)")
    p.add_argument("--out", help="folder for the result files (default benchmarks/results/)")
    p.add_argument("--keep-data", action="store_true", help="keep the temporary data folder for inspection")
    p.set_defaults(handler=cmd_soak)
