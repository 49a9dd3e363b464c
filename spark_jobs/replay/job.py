"""Kappa replay: rebuild a pipeline's speed table from the Kafka log into a new query version.

1. Check that Kafka still holds the whole history (earliest retained offset 0 in every
   partition); otherwise refuse and change nothing (retention would leave silent gaps).
2. Start speed query version N+1 alone, from the earliest offsets, with a fresh checkpoint, into
   ``speed.<p>__v<N+1>``, while the main job (ingest + speed vN) keeps serving, and the command's own
   Spark session (for the switch) starts beside it.
3. Wait until v(N+1) has caught up: within ``replay.max_lag_records`` of the topic's end offsets,
   or level with vN's committed offsets (both from ``ops.stream_progress``).
4. Switch: stop the main job (vN freezes), wait until v(N+1) has committed at least the offsets vN's
   table may hold (its last planned micro-batch included: ``served_offsets``),
   re-create ``serving.<p>`` on v(N+1) (one catalog operation, so readers never see a window
   twice or lose one), record the active version, stop the replay job and restart the main job
   (ingest + speed v(N+1), in a new lineage that takes v(N+1)'s table over where the replay's
   lineage stopped: ``spark_jobs.speed.lineages``). Version N is kept: ``--rollback`` switches back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from infra.spark_session import driver_process_env
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import (
    VersionSwitch,
    active_version,
    next_version,
    recorded_previous_version,
    set_active_version,
)
from spark_jobs.io.kafka_admin import offsets
from spark_jobs.io.lineage import furthest, last_planned_offsets
from spark_jobs.shared.background import Background
from spark_jobs.shared.locks import exclusive, held_elsewhere, switch_lock_name
from spark_jobs.shared.serving_view import view_lock
from spark_jobs.speed.control import (
    LAG_POLL_SECONDS,
    require_topic,
    speed_process,
    speed_running,
    start_speed,
    stop_speed,
)
from spark_jobs.speed.lag import committed_offsets, lag_records
from spark_jobs.speed.lineages import version_checkpoints


def check_history(cfg: TidewaterConfig, p: Pipeline) -> dict[int, tuple[int, int]]:
    """Offsets per partition if the log still starts at offset 0 everywhere, else a TidewaterError
    (``TopicMissing`` when there is no topic at all)."""
    require_topic(cfg, p)
    topic = p.topic
    parts = offsets(cfg, topic)
    lost = {part: begin for part, (begin, _end) in parts.items() if begin != 0}
    if lost:
        where = ", ".join(f"partition {k} starts at offset {v}" for k, v in sorted(lost.items()))
        raise TidewaterError(f"replay: Kafka no longer holds the full history of '{topic}' ({where}); retention "
                             "deleted records, so a replay would silently miss them. Nothing was changed. Use the "
                             "batch layer instead, and run kappa mode with retention.ms=-1")
    return parts


def switch_lock(cfg: TidewaterConfig, p: Pipeline) -> Any:
    """The lock a replay or rollback holds from before its Spark start (``prepare``) to its switch. Another
    one under way: one line naming it (the lock itself, a moment later, names only its file)."""
    if held_elsewhere(cfg, switch_lock_name(p.name)):
        raise TidewaterError(f"replay: a replay or rollback of {p.name} is already running; wait for it to finish "
                             f"(it prints its result), or see 'tidewater speed status {p.name}'")
    return exclusive(cfg, switch_lock_name(p.name), wait_seconds=0)


def served_offsets(cfg: TidewaterConfig, p: Pipeline, version: int) -> dict[str, int] | None:
    """{partition: offset} up to which version ``version``'s speed table may hold events: its committed
    offsets (``ops.stream_progress``), or further, the end of the last micro-batch that a checkpoint
    writing the table planned. A stop interrupts the micro-batch under way, possibly after its Delta
    commit and before Spark's commit log entry and its progress row (seen in CI: windows of that
    micro-batch vanished at the switch)."""
    planned = [last_planned_offsets(checkpoint, p.topic) for checkpoint in version_checkpoints(cfg, p.name, version)]
    return furthest(committed_offsets(cfg, p, "speed", version), *planned)


def not_behind(cfg: TidewaterConfig, p: Pipeline, new: int, old: int, old_may_be_empty: bool = False,
               old_stopped: bool = False) -> bool:
    """True once query version ``new`` has committed, in every partition, at least the offsets that
    version ``old`` has committed; with ``old_stopped``, at least those its table may hold
    (``served_offsets``): every window ``old`` serves is then in ``new`` too. (While ``old`` runs, its
    micro-batch under way is always ahead: that bound would hold a catch-up back for nothing.) An
    ``old`` that never wrote anything counts only if ``old_may_be_empty``."""
    target = served_offsets(cfg, p, old) if old_stopped else committed_offsets(cfg, p, "speed", old)
    done = committed_offsets(cfg, p, "speed", new)
    if not target:
        return old_may_be_empty
    if not done:
        return False
    return all(done.get(part, -1) >= offset for part, offset in target.items())


def wait_not_behind(cfg: TidewaterConfig, p: Pipeline, new: int, old: int, timeout: float) -> bool:
    """Block until ``not_behind``; called with ``old`` stopped, so that switching the view from one
    to the other neither drops nor repeats a window."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not_behind(cfg, p, new, old, old_may_be_empty=True, old_stopped=True):
            return True
        time.sleep(LAG_POLL_SECONDS)
    return False


def switch(cfg: TidewaterConfig, p: Pipeline, to_version: int, from_version: int,
           refresh: Callable[[int], Any], replay_job: str | None, restart_main: bool) -> None:
    """The atomic switch: view first (readers move in one step), then the active-version record, both under
    the serving view lock (``serving.view_lock``), so a publish never re-creates the view on the old version."""
    with view_lock(cfg, p):  # a publish reads the active version and replaces the view under it too
        refresh(to_version)
        set_active_version(cfg, p.name, to_version, previous=from_version)
    if replay_job:
        stop_speed(cfg, p, name=replay_job)
    stop_speed(cfg, p)
    if restart_main:
        start_speed(cfg, p)


def replay(cfg: TidewaterConfig, p: Pipeline, refresh: Callable[[int], Any], timeout: float = 3600,
           log: Callable[[str], None] = print, prepare: Callable[[], Any] = lambda: None) -> VersionSwitch:
    """Check, replay into v(N+1), wait for catch-up, switch. Returns timings and versions. ``prepare`` (the
    CLI's Spark start) runs under the switch lock: a second replay at once is refused before its own."""
    check_history(cfg, p)
    with switch_lock(cfg, p):
        ready = in_background(prepare)
        active = active_version(cfg, p.name)
        new = next_version(cfg, p.name, active)
        log(f"replaying {p.topic} into {naming.speed_table(p.name, new)} (active: v{active})")
        return catch_up_and_switch(cfg, p, new, active, "earliest", refresh, timeout, ready)


def in_background(prepare: Callable[[], Any]) -> Callable[[], Any]:
    """``prepare`` (the CLI's Spark start, 10-60 s) on a thread of its own, while the replay job starts and
    catches up; returns the wait for it, which re-raises its error. The driver's process environment is set
    first, here: the jobs started meanwhile inherit it as they would after a Spark start."""
    driver_process_env()
    return Background(prepare).join


def catch_up_and_switch(cfg: TidewaterConfig, p: Pipeline, new: int, active: int, starting_offsets: str | None,
                        refresh: Callable[[int], Any], timeout: float, ready: Callable[[], Any]) -> VersionSwitch:
    """Run speed version ``new`` alone until it is level with ``active``, then switch to it. ``ready``
    waits for what the switch needs (``in_background``); if it fails, nothing is switched."""
    job = f"replay-{p.name}-v{new}"
    main_running = speed_running(cfg, p)
    started = time.monotonic()
    start_speed(cfg, p, version=new, queries="speed", starting_offsets=starting_offsets, name=job)
    deadline = started + timeout
    lag = None
    while time.monotonic() < deadline:
        if not speed_process(cfg, p, job).running():
            raise TidewaterError(f"replay: job {job} exited; log {speed_process(cfg, p, job).log_file}; "
                                 f"v{active} is still active")
        lag = lag_records(cfg, p, "speed", new)
        # caught up: within the configured lag of the topic's end, or level with the live version
        # (under steady load neither query is ever at the very end of the log)
        # (only while the live version runs: a stopped one is no measure of the log's end)
        if lag is not None and (lag <= cfg.replay.max_lag_records
                                or (main_running and not_behind(cfg, p, new, active))):
            break
        time.sleep(LAG_POLL_SECONDS)
    else:
        stop_speed(cfg, p, name=job)
        raise TidewaterError(f"replay: v{new} did not catch up within {timeout:.0f}s (lag {lag}); v{active} is "
                             "still active and the replay job was stopped")
    caught_up = time.monotonic() - started
    try:
        ready()
    except BaseException:
        stop_speed(cfg, p, name=job)
        raise
    stop_speed(cfg, p)  # freeze v(N): from here on, what it serves cannot grow any more
    if not wait_not_behind(cfg, p, new, active, timeout=max(60.0, deadline - time.monotonic())):
        stop_speed(cfg, p, name=job)
        if main_running:
            start_speed(cfg, p)
        raise TidewaterError(f"replay: v{new} did not reach v{active}'s committed offsets; v{active} is still active")
    switch(cfg, p, new, active, refresh, job, restart_main=main_running or cfg.mode == "kappa")
    return VersionSwitch(p.name, from_version=active, to_version=new, lag_at_switch=lag,
                         catch_up_seconds=round(caught_up, 1), total_seconds=round(time.monotonic() - started, 1))


def rollback(cfg: TidewaterConfig, p: Pipeline, refresh: Callable[[int], Any], timeout: float = 3600,
             prepare: Callable[[], Any] = lambda: None) -> VersionSwitch:
    """Switch back to the version that was active before the last replay switch. That version froze
    at the switch, so it first catches up like a replay (never a view on a stale table), in a new
    lineage that continues its table where its last writer stopped (``spark_jobs.speed.lineages``:
    nothing counted twice, nothing rebuilt), under the same lock, which is taken first: a replay under way is named as such. ``prepare``
    runs once the rollback is known to be possible."""
    with switch_lock(cfg, p):
        previous, active = recorded_previous_version(cfg, p.name), active_version(cfg, p.name)
        if previous is None:
            raise TidewaterError(f"replay: {p.name} has no previous version to roll back to (no replay switch yet)")
        if previous == active:
            raise TidewaterError(f"replay: v{active} of {p.name} is already active; nothing to roll back to")
        return catch_up_and_switch(cfg, p, previous, active, None, refresh, timeout, in_background(prepare))
