"""``tidewater produce <pipeline>``: synthetic or file events into the pipeline's topic."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lakehouse.commands import add_pipeline_arg, config_from, pipeline_from, progress
from lakehouse.errors import TidewaterError


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; expected a fraction between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is outside 0..1; expected a fraction such as 0.05")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative; expected a number >= 0")
    return value


def cmd_produce(args: argparse.Namespace) -> int:
    from spark_jobs.io.event_generator import Mix, generate
    from spark_jobs.io.kafka_admin import ensure_topic
    from spark_jobs.io.producer import send, send_file

    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    ensure_topic(cfg, p.topic)
    started = time.monotonic()
    if args.file:
        if not Path(args.file).is_file():
            raise TidewaterError(f"produce: --file {args.file} does not exist; pass a JSON-lines file")
        counts = send_file(cfg, p.topic, Path(args.file), args.rate)
    else:
        if args.count is None and args.rate <= 0:
            raise TidewaterError("produce: give --rate N (events/s) with --duration S, or --count N")
        n = int(args.count if args.count is not None else args.rate * args.duration)
        mix = Mix(late=args.late, out_of_order=args.out_of_order, duplicate=args.duplicates, malformed=args.malformed)
        if mix.late + mix.out_of_order + mix.duplicate + mix.malformed > 1:
            raise TidewaterError("produce: --late + --out-of-order + --duplicates + --malformed must not exceed 1")
        start_ms = args.start_ms if args.start_ms is not None else int(time.time() * 1000)
        step = (1000.0 / args.rate) if args.rate > 0 else args.step_ms
        progress(f"producing {n} {p.name} events to '{p.topic}'" + (f" at {args.rate:g}/s" if args.rate else ""))
        prefix = args.id_prefix if args.id_prefix is not None else f"e{int(time.time() * 1000)}-"
        counts = send(cfg, p.topic, generate(p, n, start_ms, step, mix, args.seed, prefix), args.rate)
    took = time.monotonic() - started
    total = sum(counts.values())
    print(f"sent {total} records to {p.topic} in {took:.1f}s: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("produce", help="send synthetic (or file) events to a pipeline's Kafka topic")
    add_pipeline_arg(p)
    p.add_argument("--rate", type=_positive, default=0.0, help="events per second (0 = as fast as possible)")
    p.add_argument("--duration", type=_positive, default=10.0, help="seconds to produce at --rate")
    p.add_argument("--count", type=int, help="number of events (instead of rate x duration)")
    p.add_argument("--late", type=_fraction, default=0.0, help="fraction of events later than the watermark")
    p.add_argument("--out-of-order", type=_fraction, default=0.0, help="fraction out of order within the watermark")
    p.add_argument("--duplicates", type=_fraction, default=0.0, help="fraction of re-sent (duplicate) events")
    p.add_argument("--malformed", type=_fraction, default=0.0, help="fraction of malformed records")
    p.add_argument("--file", help="send the lines of this JSON-lines file instead of synthetic events")
    p.add_argument("--start-ms", type=int, help="event time of the first event (epoch ms; default now)")
    p.add_argument("--step-ms", type=float, default=100.0, help="event-time step when --rate is 0")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--id-prefix", help="prefix of generated event ids (default: unique per run)")
    p.set_defaults(handler=cmd_produce)
