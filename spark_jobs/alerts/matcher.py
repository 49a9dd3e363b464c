"""The state machine of each pattern kind over one key's events, in plain Python (``alerts.processor`` keeps
it in Spark state; unit tests drive it directly).

Events arrive in any order; a decision is taken only once the watermark ``W`` has passed every event it
depends on (events before ``W`` are complete: one that arrives behind it is late and dropped, by
``alerts.processor`` as by the speed layer), and events are taken in event-time order, ties by event id. So the alerts are a function of the on-time
events alone, whatever their arrival order or micro-batching, and a re-run gives the same alerts.

* ``sequence``: the first ``first`` event, then the first ``then`` event strictly later and at most
  ``within`` after it; after a match the search starts again after its ``then`` event (Flink's
  ``AFTER MATCH SKIP PAST LAST ROW``). Decided at the ``then`` event's time, or ``within`` after the
  ``first`` event when none came.
* ``threshold``: the ``when`` events in order; ``count`` of them, counted since the last alert, whose
  times span at most ``within`` make an alert. Decided at each event's time; a counted event leaves the
  state ``within`` after its time.
* ``absence``: an event followed by no event for ``within`` (the next one ``within`` or more later, or
  none while the watermark passed). Decided ``within`` after the event.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from lakehouse.alert_spec import AlertPattern


@dataclass(frozen=True, order=True)
class Event:
    t: int  # event time, epoch ms
    id: str
    first: bool = True  # matches the pattern's first/when condition
    then: bool = False  # matches the sequence's then condition


@dataclass(frozen=True)
class Match:
    pattern: str
    key: str
    events: tuple[Event, ...]

    @property
    def alert_id(self) -> str:
        """Stable: the pattern, the key and the matched events' ids."""
        return alert_id(self.pattern, self.key, [e.id for e in self.events])


def alert_id(pattern: str, key: str, event_ids: Iterable[str]) -> str:
    return hashlib.sha256(json.dumps([pattern, key, *event_ids]).encode()).hexdigest()[:32]


@dataclass
class Matcher:
    """One key's state for one pattern: ``pending`` events not decided yet (sorted), plus ``resume``
    (sequence: the last match's end) or ``recent`` (threshold: decided events since the last alert), and
    ``timer``: the event-time timer registered for the key that has not fired yet, if any."""

    pattern: AlertPattern
    key: str
    pending: list[Event] = field(default_factory=list)
    resume: Event | None = None
    recent: list[Event] = field(default_factory=list)
    timer: int | None = None

    def _times(self, e: Event) -> list[int]:
        """The times a kept event's decisions wait for: the watermark must pass each one."""
        within = self.pattern.within_ms
        if self.pattern.kind == "absence":
            return [e.t + within]
        if self.pattern.kind == "sequence":
            return [*([e.t + within] if e.first else []), *([e.t] if e.then else [])]
        return [e.t, e.t + within]  # decided; then too old to count

    def add(self, events: Iterable[Event]) -> list[int]:
        """Keep the events the pattern needs; returns the watermarks at which their decisions may be taken
        (one millisecond past each time a decision waits for, since a decision needs the watermark past it)."""
        known = set(self.pending)
        kept = [e for e in dict.fromkeys(events) if (self.pattern.kind == "absence" or e.first or e.then) and e not in known]
        self.pending = sorted({*self.pending, *kept})
        return [t + 1 for e in kept for t in self._times(e)]

    def next_due(self, watermark: int) -> int | None:
        """The first watermark after ``watermark`` at which anything held can be decided or leave the state."""
        due = [t + 1 for e in self.pending for t in self._times(e) if t + 1 > watermark]
        due += [r.t + self.pattern.within_ms + 1 for r in self.recent if r.t + self.pattern.within_ms + 1 > watermark]
        return min(due, default=None)

    def schedule(self, watermark: int) -> int | None:
        """After ``advance(watermark)``: the timer to register so that the key is advanced again once the
        watermark reaches ``next_due`` (None when a registered timer that has not fired comes first, or
        nothing is due). One timer per key at a time, instead of one per event time: each registration and
        each expired timer is a call from the Python worker to the JVM."""
        due = self.next_due(watermark)
        if due is None or (self.timer is not None and watermark < self.timer <= due):
            return None
        self.timer = due
        return due

    def advance(self, watermark: int) -> list[Match]:
        """The alerts decided once the watermark is ``watermark`` (each one once: decided events leave)."""
        step = {"sequence": self._sequence, "absence": self._absence, "threshold": self._threshold}
        return step[self.pattern.kind](watermark)

    def _match(self, events: Iterable[Event]) -> Match:
        return Match(self.pattern.name, self.key, tuple(events))

    def _first_open(self, i: int) -> int | None:
        return next((k for k in range(i, len(self.pending)) if self.pending[k].first), None)

    def _sequence(self, w: int) -> list[Match]:
        out, within, pending = [], self.pattern.within_ms, self.pending
        i = 0 if self.resume is None else bisect.bisect_right(pending, self.resume)  # pending[i:] > resume
        while (s := self._first_open(i)) is not None:
            start, end, j = pending[s], None, s + 1
            while j < len(pending) and pending[j].t <= start.t + within:
                if pending[j].then and pending[j].t > start.t:
                    end = pending[j]
                    break
                j += 1
            if end is not None and end.t < w:
                out.append(self._match((start, end)))
                self.resume, i = end, j + 1
            elif end is None and start.t + within < w:
                self.resume, i = start, s + 1
            else:
                break
        first_open = self._first_open(i)
        # gone: events up to the resume point, and closing-only events no open first event precedes
        self.pending = [e for k, e in enumerate(pending[i:], start=i)
                        if e.first or e.t >= w or (first_open is not None and k > first_open)]
        return out

    def _threshold(self, w: int) -> list[Match]:
        out, k = [], 0
        while k < len(self.pending) and self.pending[k].t < w:
            e = self.pending[k]
            k += 1
            self.recent = [r for r in self.recent if e.t - r.t <= self.pattern.within_ms] + [e]
            if len(self.recent) >= self.pattern.count:
                out.append(self._match(self.recent))
                self.recent = []
        self.pending = self.pending[k:]
        # a counted event more than ``within`` before the watermark can meet no later event: it leaves
        self.recent = [r for r in self.recent if r.t >= w - self.pattern.within_ms]
        return out

    def _absence(self, w: int) -> list[Match]:
        out, within, kept = [], self.pattern.within_ms, []
        for i, e in enumerate(self.pending):
            later = self.pending[i + 1] if i + 1 < len(self.pending) else None
            if later is not None and later.t - e.t < within:
                continue  # a known event within the gap: never an alert (a later arrival only shortens it)
            if e.t + within < w:
                out.append(self._match((e,)))
            else:
                kept.append(e)
        self.pending = kept
        return out

    def empty(self) -> bool:
        return not self.pending and not self.recent

    def dumps(self) -> str:
        def row(e: Event) -> list[object]:
            return [e.t, e.id, e.first, e.then]

        return json.dumps({"pending": [row(e) for e in self.pending], "recent": [row(e) for e in self.recent],
                           "resume": row(self.resume) if self.resume else None, "timer": self.timer})


def loads(pattern: AlertPattern, key: str, text: str | None) -> Matcher:
    stored = json.loads(text) if text else {}
    resume = stored.get("resume")
    return Matcher(pattern, key, [Event(*e) for e in stored.get("pending", [])],
                   Event(*resume) if resume else None, [Event(*e) for e in stored.get("recent", [])], stored.get("timer"))
