"""Exclusive locks between Tidewater processes on one host (``flock`` on files under ``run/``).

The kernel drops a ``flock`` when its holder dies, kill -9 included, so a crashed job never
leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError


def lock_path(cfg: TidewaterConfig, name: str) -> Path:
    path = naming.run_dir(cfg) / f"lock-{name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


BATCH_LOCK_WAIT_SECONDS = 1800.0


def batch_lock(cfg: TidewaterConfig, pipeline: str) -> contextlib.AbstractContextManager[None]:
    """One writer of ``batch.<p>__staging`` and ``batch.<p>`` at a time: staging is overwritten by
    each run, so a second run staging between another's stage and publish would otherwise leave a
    full publish without its rows (and delete ``batch.<p>``). Runs that start together queue here;
    the one staged last is the only one that can publish (``batch_runs.require_latest_staged``)."""
    return exclusive(cfg, f"batch-{pipeline}", BATCH_LOCK_WAIT_SECONDS)


def switch_lock_name(pipeline: str) -> str:
    """Held by a replay or rollback from start to switch: while it is held by another process,
    ``tidewater speed start`` (the supervisor DAG's restart) refuses to start the main job, which the
    switch has frozen on purpose and restarts itself."""
    return f"replay-{pipeline}"


def serving_view_lock_name(pipeline: str) -> str:
    """Held from a read of the pipeline's active speed version to the replace of ``serving.<p>`` on it
    (``serving.view_lock``), and by a replay switch around its view refresh and its record of the new
    active version: a publish's refresh then comes wholly before or after a switch. Short: never held
    while a query catches up."""
    return f"serving-view-{pipeline}"


_held = threading.local()  # locks THIS thread holds: the job service runs commands on threads of one process


def _held_here() -> set[str]:
    if not hasattr(_held, "names"):
        _held.names = set()
    names: set[str] = _held.names
    return names


def held_elsewhere(cfg: TidewaterConfig, name: str) -> bool:
    """True while another process, or another thread of this one, holds lock ``name`` (a ``flock``
    belongs to an open file, so another thread's open() conflicts with it just like a process's)."""
    if name in _held_here():
        return False
    with open(lock_path(cfg, name), "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@contextlib.contextmanager
def exclusive(cfg: TidewaterConfig, name: str, wait_seconds: float) -> Iterator[None]:
    """Hold lock ``name`` for the block; wait up to ``wait_seconds`` for another holder to finish."""
    with exclusive_file(lock_path(cfg, name), wait_seconds, name):
        yield


@contextlib.contextmanager
def reentrant(cfg: TidewaterConfig, name: str, wait_seconds: float) -> Iterator[None]:
    """``exclusive``; in a thread that holds lock ``name`` already, the block runs under that hold (a
    second ``flock`` of the same file would wait for the thread itself)."""
    if name in _held_here():
        yield
        return
    with exclusive(cfg, name, wait_seconds):
        yield


@contextlib.contextmanager
def exclusive_file(path: Path, wait_seconds: float, name: str | None = None) -> Iterator[None]:
    """Hold the lock on file ``path`` (created) for the block; wait up to ``wait_seconds`` for another
    holder. ``name``: recorded as held by this thread (``held_elsewhere``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_seconds
    with open(path, "w") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    waited = f" for more than {wait_seconds:.0f}s" if wait_seconds >= 1 else ""
                    raise TidewaterError(f"lock {path} is held by another Tidewater process{waited}; wait for it "
                                         "to finish or check 'tidewater status'") from None
                time.sleep(0.5)
        if name is not None:
            _held_here().add(name)
        try:
            yield
        finally:
            _held_here().discard(name or "")
            fcntl.flock(handle, fcntl.LOCK_UN)
