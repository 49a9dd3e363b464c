"""``tidewater produce <pipeline>``: synthetic or file events into the pipeline's topic.

Records the broker did not acknowledge are reported as one line (count, topic, first error) with
exit status 2; an unreachable broker is reported before anything is sent."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from infra.services.kafka_broker import listening
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from spark_jobs.io.kafka_admin import ensure_topic
from spark_jobs.io.producer import send, send_file
from spark_jobs.synthetic_events import Mix, Record, default_start_ms, generate
from tidewater.commands import Subparsers, add_pipeline_arg, config_from, pipeline_from, progress


def _argument(convert: Callable[[str], Any], accept: Callable[[Any], bool], expected: str) -> Callable[[str], Any]:
    """An argparse ``type``: ``text`` converted, and refused in one line naming ``expected``."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {expected}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"{text!r} is out of range; expected {expected}")
        return value
    return parse


_fraction = _argument(float, lambda v: 0.0 <= v <= 1.0, "a fraction between 0 and 1, such as 0.05")
_count = _argument(int, lambda v: v >= 0, "a whole number of events >= 0 (0 creates the topic only)")
_positive = _argument(float, lambda v: v >= 0, "a number >= 0")


def _planned(args: argparse.Namespace) -> int:
    """How many records this run means to send (the non-empty lines of ``--file``)."""
    if args.file:
        if not Path(args.file).is_file():
            raise TidewaterError(f"produce: --file {args.file} does not exist; pass a JSON-lines file")
        with open(args.file, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    if args.count is None and args.rate <= 0:
        raise TidewaterError("produce: give --rate N (events/s) with --duration S, or --count N")
    if args.late + args.out_of_order + args.duplicates + args.malformed > 1:
        raise TidewaterError("produce: --late + --out-of-order + --duplicates + --malformed must not exceed 1")
    return int(args.count if args.count is not None else args.rate * args.duration)


def _require_topic(cfg: TidewaterConfig, topic: str, planned: int) -> None:
    """A one-line error, before anything is sent, when no broker answers or the topic cannot be made."""
    from kafka.errors import KafkaError

    where = f"at {cfg.kafka.bootstrap}; none of the {planned} records was sent"
    if not listening(cfg.kafka.bootstrap):
        raise TidewaterError(f"produce: no Kafka broker answers {where}; start it with 'tidewater up' "
                             "or set kafka.bootstrap_servers")
    try:
        ensure_topic(cfg, topic)
    except KafkaError as exc:
        raise TidewaterError(f"produce: topic '{topic}' could not be checked or created {where} "
                             f"({exc.__class__.__name__}); check the broker with 'tidewater status'") from None


def synthetic_records(p: Pipeline, args: argparse.Namespace, n: int) -> Iterator[Record]:
    """The ``n`` synthetic records this run sends: ``args``' mix, seed and event ids; without ``--start-ms``
    stamped up to now, never after it (``default_start_ms``)."""
    mix = Mix(late=args.late, out_of_order=args.out_of_order, duplicate=args.duplicates, malformed=args.malformed)
    now_ms = int(time.time() * 1000)
    step = (1000.0 / args.rate) if args.rate > 0 else args.step_ms
    start_ms = args.start_ms if args.start_ms is not None else default_start_ms(n, step, args.rate > 0, now_ms)
    prefix = args.id_prefix if args.id_prefix is not None else f"e{now_ms}-"
    return generate(p, n, start_ms, step, mix, args.seed, prefix)


def cmd_produce(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    p = pipeline_from(args, cfg)
    n = _planned(args)
    _require_topic(cfg, p.topic, n)
    started = time.monotonic()
    if args.file:
        result = send_file(cfg, p.topic, Path(args.file), args.rate, args.timeout)
    else:
        progress(f"producing {n} {p.name} events to '{p.topic}'" + (f" at {args.rate:g}/s" if args.rate else ""))
        result = send(cfg, p.topic, synthetic_records(p, args, n), args.rate, args.timeout)
    took = time.monotonic() - started
    kinds = ", ".join(f"{k}={v}" for k, v in sorted(result.counts.items()))
    if result.failed:
        print(f"delivered {result.delivered} of {result.total} records to {p.topic} in {took:.1f}s ({kinds})")
        raise TidewaterError(f"produce: {result.failed} of {result.total} records were not delivered to '{p.topic}' "
                             f"at {cfg.kafka.bootstrap} ({result.error}); check the broker with 'tidewater status' "
                             "and produce them again")
    print(f"sent {result.total} records to {p.topic} in {took:.1f}s: {kinds}")
    return 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser("produce", help="send synthetic (or file) events to a pipeline's Kafka topic")
    add_pipeline_arg(p)
    p.add_argument("--rate", type=_positive, default=0.0, help="events per second (0 = as fast as possible)")
    p.add_argument("--duration", type=_positive, default=10.0, help="seconds to produce at --rate")
    p.add_argument("--count", type=_count, help="number of events (instead of rate x duration)")
    p.add_argument("--late", type=_fraction, default=0.0, help="fraction of events later than the watermark")
    p.add_argument("--out-of-order", type=_fraction, default=0.0, help="fraction out of order within the watermark")
    p.add_argument("--duplicates", type=_fraction, default=0.0, help="fraction of re-sent (duplicate) events")
    p.add_argument("--malformed", type=_fraction, default=0.0, help="fraction of malformed records")
    p.add_argument("--file", help="send the lines of this JSON-lines file instead of synthetic events")
    p.add_argument("--start-ms", type=int, help="event time of the first event (epoch ms; default: the events "
                   "end now, or with --rate start now and are sent in real time)")
    p.add_argument("--step-ms", type=float, default=100.0, help="event-time step when --rate is 0")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--id-prefix", help="prefix of generated event ids (default: unique per run)")
    p.add_argument("--timeout", type=_positive, default=120.0,
                   help="seconds to wait for the broker and for each record's acknowledgement (default 120)")
    p.set_defaults(handler=cmd_produce)
