"""Which speed-query version a pipeline serves: the one owner of the active/previous/next version.

Files under ``<data_dir>/versions/``: ``<p>.active`` (the version ``serving.<p>`` reads, default 1),
``<p>.previous`` (the rollback target, written by a replay switch) and ``<p>.v<N>.writer`` (the
checkpoint folder of the query lineage that writes, or last wrote, version N's speed table:
``spark_jobs.speed.lineages``). A new version number is never reused: ``next_version`` skips every
version that has a checkpoint folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lakehouse import naming
from lakehouse.config import TidewaterConfig


@dataclass(frozen=True)
class VersionSwitch:
    """One switch of ``serving.<p>`` from speed version ``from_version`` to ``to_version`` (a replay or a
    rollback), with what it cost: the new version's lag (records) when it was switched, the seconds until
    it caught up (its job's start included) and the seconds in all (the switch included)."""

    pipeline: str
    from_version: int
    to_version: int
    lag_at_switch: int | None
    catch_up_seconds: float
    total_seconds: float


def _version_path(cfg: TidewaterConfig, pipeline: str, kind: str) -> Path:
    return naming.versions_dir(cfg) / f"{pipeline}.{kind}"


def active_version(cfg: TidewaterConfig, pipeline: str) -> int:
    """The serving (active) speed version, as recorded by replay switches (default 1)."""
    try:
        return int(_version_path(cfg, pipeline, "active").read_text().strip())
    except (FileNotFoundError, ValueError):
        return 1


def recorded_previous_version(cfg: TidewaterConfig, pipeline: str) -> int | None:
    """The version active before the last replay switch, or None before the first switch."""
    path = _version_path(cfg, pipeline, "previous")
    if not path.exists():
        return None
    return int(path.read_text().strip())


def previous_version(cfg: TidewaterConfig, pipeline: str, active: int) -> int:
    """The rollback target recorded by replay (``versions/<p>.previous``), else ``active - 1``."""
    try:
        return int(_version_path(cfg, pipeline, "previous").read_text().strip())
    except (FileNotFoundError, ValueError):
        return active - 1


def set_active_version(cfg: TidewaterConfig, pipeline: str, version: int, previous: int | None = None) -> None:
    """Record the active (and the previous) speed version, each file atomically (write + rename)."""
    records = ([("previous", previous)] if previous is not None else []) + [("active", version)]
    for kind, value in records:
        _write(_version_path(cfg, pipeline, kind), value)


def writer(cfg: TidewaterConfig, pipeline: str, version: int) -> str | None:
    """The checkpoint folder name of the lineage that last wrote version ``version``'s speed table
    (None: no lineage recorded one)."""
    try:
        return _version_path(cfg, pipeline, f"v{version}.writer").read_text().strip() or None
    except FileNotFoundError:
        return None


def set_writer(cfg: TidewaterConfig, pipeline: str, version: int, checkpoint_name: str) -> None:
    """Record the lineage that writes version ``version``'s speed table from now on (atomically)."""
    _write(_version_path(cfg, pipeline, f"v{version}.writer"), checkpoint_name)


def _write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{value}\n")
    tmp.replace(path)


def next_version(cfg: TidewaterConfig, pipeline: str, active: int) -> int:
    """A version never used before (checkpoints are never reused)."""
    root = naming.checkpoint_dir(cfg, pipeline, "speed", active).parent
    used = [version for d in root.glob("*_v*")
            if d.is_dir() and not d.name.startswith("ingest_") and (version := naming.checkpoint_version(d.name))]
    return max([active, *used]) + 1
