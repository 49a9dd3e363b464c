"""Which speed-query version a pipeline serves: the one owner of the active/previous/next version.

Files under ``<data_dir>/versions/``: ``<p>.active`` (the version ``serving.<p>`` reads, default 1)
and ``<p>.previous`` (the rollback target, written by a replay switch). A new version number is
never reused: ``next_version`` skips every version that has a checkpoint folder.
"""

from __future__ import annotations

from pathlib import Path

from lakehouse import naming
from lakehouse.config import TidewaterConfig


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
        path = _version_path(cfg, pipeline, kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{value}\n")
        tmp.replace(path)


def next_version(cfg: TidewaterConfig, pipeline: str, active: int) -> int:
    """A version never used before (checkpoints are never reused)."""
    root = naming.checkpoint_dir(cfg, pipeline, "speed", active).parent
    used = [int(d.name.rsplit("_v", 1)[1]) for d in root.glob("*_v*")
            if d.is_dir() and d.name.rsplit("_v", 1)[1].isdigit() and not d.name.startswith("ingest_")]
    return max([active, *used]) + 1
