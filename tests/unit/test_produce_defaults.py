"""``tidewater produce``'s synthetic events are ones the pipeline accepts: none is stamped after the wall
clock that sends it (the parser quarantines an event stamped more than ``max_future_skew`` after its
Kafka arrival as ``FUTURE_TIMESTAMP``), whatever the pipeline and with no skew allowance at all."""

from __future__ import annotations

import time

import pytest

from lakehouse.pipeline import Pipeline, available_pipelines, load_pipeline
from spark_jobs.io.producer import paced
from spark_jobs.synthetic_events import Record
from tidewater.cli import build_parser
from tidewater.commands.produce import synthetic_records

pytestmark = pytest.mark.unit
MIX = ("--malformed", "0.02", "--duplicates", "0.02", "--out-of-order", "0.03", "--late", "0.01")
ACCEPTED_KINDS = ("valid", "out_of_order", "duplicate", "late")
NEAR_NOW_MS = 3_000


def now_ms() -> int:
    return int(time.time() * 1000)


def event_ms(rec: Record, p: Pipeline) -> int | None:
    """The event time a record carries, or None (a malformed record's value is not an event)."""
    value = rec.event[p.event_time] if rec.event is not None else None
    assert value is None or isinstance(value, int), rec
    return value


@pytest.mark.parametrize("pipeline", available_pipelines())
def test_default_events_end_at_now_and_none_is_ahead_of_it(pipeline: str) -> None:
    p = load_pipeline(pipeline)
    args = build_parser().parse_args(["produce", pipeline, "--count", "5000", *MIX])
    records = list(synthetic_records(p, args, args.count))
    generated_ms = now_ms()
    stamped = {kind: [ms for r in records if r.kind == kind and (ms := event_ms(r, p)) is not None]
               for kind in ACCEPTED_KINDS}
    assert all(stamped[kind] for kind in ("valid", "out_of_order", "duplicate")), {k: len(v) for k, v in stamped.items()}
    ahead = {kind: max(times) - generated_ms for kind, times in stamped.items() if times and max(times) > generated_ms}
    assert not ahead, f"events stamped after the wall clock at generation (ms ahead, per kind): {ahead}"
    valid = stamped["valid"]
    assert generated_ms - max(valid) <= NEAR_NOW_MS, f"the valid events end {generated_ms - max(valid)} ms before now"
    assert max(valid) - min(valid) >= (len(records) - 50) * args.step_ms  # spread over the whole run, behind now


def test_paced_events_are_never_ahead_of_the_moment_they_are_sent() -> None:
    """With ``--rate``, events are stamped at real time: each one leaves at or after its event time."""
    p = load_pipeline("sensor_readings")
    args = build_parser().parse_args(["produce", p.name, "--rate", "400", "--duration", "0.5", *MIX])
    n = int(args.rate * args.duration)
    ahead = []
    for rec in paced(synthetic_records(p, args, n), args.rate):
        due_ms, stamped_ms = now_ms(), event_ms(rec, p)
        if stamped_ms is not None and stamped_ms > due_ms:
            ahead.append((rec.kind, stamped_ms - due_ms))
    assert not ahead, f"events sent before their event time (kind, ms ahead): {ahead[:5]}"


def test_an_explicit_start_is_kept() -> None:
    p = load_pipeline("sensor_readings")
    args = build_parser().parse_args(["produce", p.name, "--count", "10", "--start-ms", "1800000000000"])
    records = list(synthetic_records(p, args, args.count))
    assert [event_ms(r, p) for r in records] == [1_800_000_000_000 + 100 * i for i in range(10)]
