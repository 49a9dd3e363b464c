"""The alerts step: a pipeline's deduplicated, watermarked valid events -> the alerts of its patterns, one
``transformWithState`` (row-based, event time, RocksDB state) grouped by (pattern, key).

Each event becomes one row per pattern (``pattern_rows``, one projection for all patterns): the pattern's
key as a string, the event's id and time, and whether it matches the pattern's conditions
(``Condition.apply`` on Spark columns: never a SQL string). Per group the state is one ``alerts.matcher.Matcher`` (JSON); each call (new rows or an
expired timer) advances the matcher to the current watermark, emits what it decided, and keeps one
event-time timer registered at the next watermark at which anything the group holds can be decided or
leave (``Matcher.schedule``): one timer per group, not one per event, since every registration and every
expired timer is a round trip between the Python worker and the JVM. A group's state is cleared as soon as
its matcher holds nothing undecided, and while it holds anything a timer is due at which it leaves: that
is the state's time to live, in event time (Spark 4.1 refuses a state TTL in event-time mode:
``STATEFUL_PROCESSOR_INCORRECT_TIME_MODE_TO_ASSIGN_TTL``).
An event behind the watermark of the micro-batch that reads it (event time before it: the speed layer's
rule) is dropped here: Spark's dedup step before this one keeps such rows (measured: three readings 2:15
behind the watermark passed it), and Spark's own late filter for a second stateful operator uses the
previous micro-batch's watermark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from lakehouse.alert_spec import AlertPattern
from lakehouse.pipeline import Pipeline
from spark_jobs.alerts import matcher

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

STATE_SCHEMA = "matcher STRING"  # matcher.Matcher.dumps()
OUTPUT_SCHEMA = ("alert_id STRING, pattern STRING, kind STRING, key STRING, event_ids ARRAY<STRING>, "
                 "event_times_ms ARRAY<BIGINT>, watermark_ms BIGINT")


def _processor_class() -> type:
    """The StatefulProcessor class (pyspark imported only where an alerts query is built)."""
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

    class PatternAlerts(StatefulProcessor):
        def __init__(self, p: Pipeline) -> None:
            self.patterns = {a.name: a for a in p.alerts}

        def init(self, handle: StatefulProcessorHandle) -> None:
            self.handle = handle
            self.state = handle.getValueState("matcher", STATE_SCHEMA)

        def _load(self, key: tuple[str, str]) -> tuple[matcher.Matcher, bool]:
            """The group's matcher, and whether the state held one (each state call is a round trip to the JVM:
            ``get`` answers None for no state, without an ``exists`` first)."""
            stored = self.state.get()
            return matcher.loads(self.patterns[key[0]], key[1], stored[0] if stored else None), stored is not None

        def _emit(self, m: matcher.Matcher, watermark: int, stored: bool) -> Iterator[Row]:
            for alert in m.advance(watermark):
                yield Row(alert_id=alert.alert_id, pattern=alert.pattern, kind=m.pattern.kind, key=alert.key,
                          event_ids=[e.id for e in alert.events], event_times_ms=[e.t for e in alert.events],
                          watermark_ms=watermark)
            if m.empty():
                if stored:
                    self.state.clear()
                return
            due = m.schedule(watermark)
            if due is not None:
                self.handle.registerTimer(due)
            self.state.update((m.dumps(),))

        def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: Any) -> Iterator[Row]:
            (m, stored), watermark = self._load(key), timerValues.getCurrentWatermarkInMs()
            m.add(matcher.Event(r.event_ms, r.event_id, bool(r.first), bool(r.then)) for r in rows
                  if r.event_ms >= watermark)
            yield from self._emit(m, watermark, stored)

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Row]:
            m, stored = self._load(key)
            yield from self._emit(m, timerValues.getCurrentWatermarkInMs(), stored)

        def close(self) -> None:
            pass

    return PatternAlerts


def _condition(pattern: AlertPattern, which: str) -> Column:
    from pyspark.sql import functions as F

    condition = getattr(pattern, which)
    if condition is None:
        return F.lit(which == "first")  # absence: every event counts; no closing condition
    return F.coalesce(condition.apply(F.col(condition.field)), F.lit(False))


def pattern_rows(p: Pipeline, events: DataFrame) -> DataFrame:
    """One row per (pattern, event) that the pattern looks at: pattern, key, event id and time, flags. One
    projection over ``events`` for every pattern (an array of one struct per pattern, exploded): a union
    of one branch per pattern would make each micro-batch read and parse Kafka, and keep the dedup state,
    once per pattern."""
    from pyspark.sql import functions as F

    per_pattern = [F.struct(F.lit(a.name).alias("pattern"), F.col(a.key).cast("string").alias("key"),
                            _condition(a, "first").alias("first"), _condition(a, "then").alias("then"))
                   for a in p.alerts]
    rows = events.select(F.col(p.event_id).alias("event_id"), F.unix_millis("event_time").alias("event_ms"),
                         F.explode(F.array(*per_pattern)).alias("row"))
    return (rows.select("row.pattern", "row.key", "event_id", "event_ms", "row.first", "row.then")
            .where("key IS NOT NULL AND (first OR then)"))


def pattern_alerts(p: Pipeline) -> Callable[[DataFrame], DataFrame]:
    """Deduplicated, watermarked valid events -> alerts: ``OUTPUT_SCHEMA``'s columns."""

    def _alerts(events: DataFrame) -> DataFrame:
        return pattern_rows(p, events).groupBy("pattern", "key").transformWithState(
            _processor_class()(p), OUTPUT_SCHEMA, "Append", "EventTime")

    return _alerts
