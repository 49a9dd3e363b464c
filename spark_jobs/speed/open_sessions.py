"""The speed layer's session windows, shown while they are open: ``open_sessions(p)`` is the ``speed`` query's
stateful step for a session pipeline (``speed.queries``), written by ``speed.session_sink.SessionMerge``.

Per key, Spark state (``transformWithState``, event time, RocksDB) holds the key's open sessions
(``speed.session_state``). Each micro-batch that brings events for a key emits what changed:

* ``op = 'upsert'``, ``is_final = false``: a session opened, extended, or made by merging others;
* ``op = 'delete'``: a session that is gone, because an event extended it (its ``window_end`` moved) or
  bridged it with another one (the merged session replaces both).

An event-time timer at each open session's end fires once the watermark reaches it: the session is
emitted a last time with ``is_final = true`` and leaves the state, so the state holds open sessions only.
Events behind the watermark are dropped before the step, as Spark's ``session_window`` drops them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse import contracts
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.pipeline_spec import FIELD_TYPES
from spark_jobs.speed import session_state
from spark_jobs.speed.session_state import Session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

EVENT_MS = "_event_ms"
STATE_SCHEMA = "sessions STRING"  # session_state.dumps of the key's open sessions


def output_schema(p: Pipeline) -> str:
    """The step's rows: times in epoch ms (Python's naive datetimes would take the host's zone)."""
    keys = [f"`{k}` {FIELD_TYPES[p.schema[k]]}" for k in p.keys]
    aggs = [f"`{a.name}` {contracts.aggregate_type(p, a.fn, a.column)}" for a in p.aggregates]
    return ", ".join([*keys, "window_start_ms BIGINT", "window_end_ms BIGINT", *aggs, "max_event_ms BIGINT",
                      "is_final BOOLEAN", "op STRING"])


def value_columns(p: Pipeline) -> list[str]:
    return sorted({str(a.column) for a in p.aggregates if a.column})


def _processor_class() -> type:
    """The StatefulProcessor class (pyspark imported only where a session query is built)."""
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

    class OpenSessions(StatefulProcessor):
        def __init__(self, p: Pipeline) -> None:
            self.p, self.gap_ms = p, p.window.gap_seconds * 1000
            self.columns = value_columns(p)

        def init(self, handle: StatefulProcessorHandle) -> None:
            self.handle = handle
            self.state = handle.getValueState("sessions", STATE_SCHEMA)

        def _load(self) -> list[Session]:
            stored = self.state.get() if self.state.exists() else None
            return session_state.loads(stored[0]) if stored else []

        def _save(self, sessions: list[Session]) -> None:
            if sessions:
                self.state.update((session_state.dumps(sessions),))
            else:
                self.state.clear()

        def _row(self, key: tuple[Any, ...], s: Session, is_final: bool, op: str) -> Row:
            aggs = {a.name: session_state.value(a, x) for a, x in zip(self.p.aggregates, s.acc, strict=True)}
            return Row(**dict(zip(self.p.keys, key, strict=True)), window_start_ms=s.start, window_end_ms=s.end,
                       **aggs, max_event_ms=s.max_event, is_final=is_final, op=op)

        def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: Any) -> Iterator[Row]:
            before = self._load()
            events = ((r[EVENT_MS], {c: r[c] for c in self.columns}) for r in rows)
            after = session_state.add_events(self.p.aggregates, self.gap_ms, before, events)
            gone, changed = session_state.changes(before, after)
            for s in gone:
                self.handle.deleteTimer(s.end)
            for s in changed:
                self.handle.registerTimer(s.end)
            self._save(after)
            yield from (self._row(key, s, False, "delete") for s in gone)
            yield from (self._row(key, s, False, "upsert") for s in changed)

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Row]:
            expiry = expiredTimerInfo.getExpiryTimeInMs()
            sessions = self._load()
            self._save([s for s in sessions if s.end > expiry])
            yield from (self._row(key, s, True, "upsert") for s in sessions if s.end <= expiry)

        def close(self) -> None:
            pass

    return OpenSessions


def require_open_session_state(p: Pipeline, checkpoint: Path) -> None:
    """Refuse a checkpoint that committed micro-batches of a plan without this step (Spark's
    ``session_window``): Spark cannot resume its state under another operator."""
    operators = " ".join(f.read_text(errors="replace") for f in checkpoint.glob("state/*/_metadata/**/*") if f.is_file())
    if (checkpoint / "commits" / "0").exists() and "transformWithState" not in operators:
        raise TidewaterError(f"the speed checkpoint {checkpoint} holds session_window state, which the open-session "
                             f"step cannot resume; build a new speed version from the Kafka log: tidewater replay {p.name}")


def open_sessions(p: Pipeline) -> Callable[[DataFrame], DataFrame]:
    """Deduplicated, watermarked events -> the changes of their keys' sessions: keys, ``window_start``,
    ``window_end``, aggregates, ``max_event_time``, ``is_final``, ``op``."""

    def _sessions(events: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        values = [c for c in value_columns(p) if c not in p.keys]
        steps = (events.select(*p.keys, "event_time", F.unix_millis("event_time").alias(EVENT_MS), *values)
                 .groupBy(*p.keys)
                 .transformWithState(_processor_class()(p), output_schema(p), "Update", "EventTime"))
        return steps.select(
            *p.keys, F.timestamp_millis("window_start_ms").alias("window_start"),
            F.timestamp_millis("window_end_ms").alias("window_end"), *(a.name for a in p.aggregates),
            F.timestamp_millis("max_event_ms").alias("max_event_time"), "is_final", "op")

    return _sessions
