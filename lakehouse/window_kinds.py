"""The window kinds, each one strategy: everything that differs between tumbling, sliding and session
windows, so that no other module compares ``window.type``.

* ``assign``: the window (or windows) an event belongs to, as a Spark column (``window`` or
  ``session_window`` over ``event_time``): the speed job, the batch layer and the reconciliation all
  group by it.
* ``keeps_state`` (fold): tumbling and sliding windows are fixed intervals whose partials combine, so the
  speed job appends per-micro-batch partials and the ``speed.<p>`` VIEW folds them (``speed_fold``), and an
  incremental batch run folds or recomputes only the touched windows. A session's extent depends on the
  key's other events: the speed job keeps each key's open sessions in Spark state and MERGEs every change (open
  ones as provisional rows, closed ones final), and
  a batch run recomputes every session of an affected key.
* ``end`` (completed by a cutoff): a window is complete once ``end <= cutoff``. For a session that is its
  last event plus the gap (a filter on a session's ``window_end`` is pushed below ``session_window`` and
  cut long sessions in two, measured on Spark 4.1).
* ``open_at``: the events that can still belong to a window open at a cutoff (those an incremental run
  must read beside the new ones).
* ``bucket_seconds``: fixed windows start and end on whole buckets since the epoch (the slide, or the
  size of a tumbling window): a window is the union of ``size / slide`` buckets.
* ``output_mode``: the speed query's Spark output mode (``update``: the session query emits every change).
* ``parts``: the durations a definition's ``window:`` must give.
* ``missed``: the window (or windows) an event behind the speed layer's watermark missed (``late.<p>``):
  those ``assign`` gives a fixed window's event; for a session, the one the event would have opened,
  ``[event_time, event_time + gap)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import Column

    from lakehouse.pipeline_spec import Window


class WindowKind(Protocol):
    @property
    def parts(self) -> tuple[str, ...]: ...

    @property
    def keeps_state(self) -> bool: ...

    @property
    def output_mode(self) -> str: ...

    def assign(self, w: Window) -> Column: ...

    def missed(self, w: Window) -> Column: ...

    def end(self, w: Window, prefix: str = "") -> Column: ...

    def open_at(self, w: Window, cutoff: Column) -> Column: ...

    def bucket_seconds(self, w: Window) -> int: ...


@dataclass(frozen=True)
class Fixed:
    """Tumbling (``size``) and sliding (``size``, ``slide``) windows: fixed intervals of event time."""

    parts: tuple[str, ...]
    keeps_state: bool = False
    output_mode: str = "update"

    def assign(self, w: Window) -> Column:
        from pyspark.sql import functions as F

        return F.window("event_time", str(w.size), *([str(w.slide)] if "slide" in self.parts else []))

    def missed(self, w: Window) -> Column:
        return self.assign(w)

    def end(self, w: Window, prefix: str = "") -> Column:
        from pyspark.sql import functions as F

        return F.col(f"{prefix}window_end")

    def open_at(self, w: Window, cutoff: Column) -> Column:
        from pyspark.sql import functions as F

        return F.col("event_time") >= cutoff - F.expr(f"INTERVAL {w.size_seconds} SECONDS")

    def bucket_seconds(self, w: Window) -> int:
        return w.slide_seconds if "slide" in self.parts else w.size_seconds


@dataclass(frozen=True)
class Session:
    """Session windows (``gap``): a key's events closer than the gap, one window."""

    parts: tuple[str, ...] = ("gap",)
    keeps_state: bool = True
    output_mode: str = "update"  # transformWithState emits each change of an open session

    def assign(self, w: Window) -> Column:
        from pyspark.sql import functions as F

        return F.session_window("event_time", str(w.gap))

    def missed(self, w: Window) -> Column:
        from pyspark.sql import functions as F

        return F.struct(F.col("event_time").alias("start"),
                        (F.col("event_time") + F.expr(f"INTERVAL {w.gap_seconds} SECONDS")).alias("end"))

    def end(self, w: Window, prefix: str = "") -> Column:
        from pyspark.sql import functions as F

        return F.col(f"{prefix}max_event_time") + F.expr(f"INTERVAL {w.gap_seconds} SECONDS")

    def open_at(self, w: Window, cutoff: Column) -> Column:
        from pyspark.sql import functions as F

        return F.col("event_time") > cutoff - F.expr(f"INTERVAL {w.gap_seconds} SECONDS")

    def bucket_seconds(self, w: Window) -> int:
        return w.size_seconds  # 0: sessions have no buckets


KINDS: dict[str, WindowKind] = {"tumbling": Fixed(("size",)), "sliding": Fixed(("size", "slide")), "session": Session()}


def kind_of(w: Window) -> WindowKind:
    return KINDS[w.type]
