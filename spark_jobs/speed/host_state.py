"""What the shared speed host should run and what it runs: small JSON files under ``run/speed-host/``.

With ``speed.host: shared`` one process (``spark_jobs.speed.host``, PID file ``speed-shared-host``)
runs every pipeline's speed queries. ``tidewater speed start <p>`` writes ``wanted/<p>.json`` (version,
queries, a fresh token), ``speed stop <p>`` removes it; the host reconciles its pipelines with that set
and writes ``status/<p>.json`` (``starting``, ``running``, ``failed`` with the error, or ``stopped``),
carrying the token it acted on and its own PID, so a reader tells this host's answer from a stale
one. Every file is written whole and renamed: readers see the old content or the new, never a torn file.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse import naming
from lakehouse.config import TidewaterConfig

HOST_PROCESS = "speed-shared-host"  # no pipeline's name has a '-': never another pipeline's speed-<p>
STATES = ("starting", "running", "failed", "stopped")


@dataclass(frozen=True)
class Wanted:
    pipeline: str
    version: int
    queries: str = "ingest,speed"
    starting_offsets: str | None = None
    token: str = ""

    @property
    def which(self) -> list[str]:
        return self.queries.split(",")


def host_dir(cfg: TidewaterConfig) -> Path:
    return naming.run_dir(cfg) / "speed-host"


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(f".{os.getpid()}.tmp")
    scratch.write_text(json.dumps(data))
    os.replace(scratch, path)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def want(cfg: TidewaterConfig, pipeline: str, version: int, queries: str = "ingest,speed",
         starting_offsets: str | None = None) -> Wanted:
    """Ask the host to run ``pipeline``'s queries (a new token: the host restarts them if they run)."""
    wanted = Wanted(pipeline, version, queries, starting_offsets, uuid.uuid4().hex)
    _write(host_dir(cfg) / "wanted" / f"{pipeline}.json", asdict(wanted))
    return wanted


def unwant(cfg: TidewaterConfig, pipeline: str) -> bool:
    """Ask the host to stop ``pipeline``; False when it was not wanted."""
    try:
        (host_dir(cfg) / "wanted" / f"{pipeline}.json").unlink()
        return True
    except FileNotFoundError:
        return False


def wanted(cfg: TidewaterConfig) -> dict[str, Wanted]:
    """Every pipeline the host should run (an unreadable entry is skipped: its writer renames whole files)."""
    out: dict[str, Wanted] = {}
    for path in sorted((host_dir(cfg) / "wanted").glob("*.json")):
        data = _read(path)
        if data is not None:
            out[path.stem] = Wanted(**data)
    return out


def wanted_one(cfg: TidewaterConfig, pipeline: str) -> Wanted | None:
    data = _read(host_dir(cfg) / "wanted" / f"{pipeline}.json")
    return Wanted(**data) if data is not None else None


def write_status(cfg: TidewaterConfig, w: Wanted, state: str, error: str | None = None) -> None:
    if state not in STATES:
        raise ValueError(f"host_state.write_status: state {state!r} is not one of {STATES}")
    _write(host_dir(cfg) / "status" / f"{w.pipeline}.json",
           {"state": state, "error": error, "version": w.version, "token": w.token, "host_pid": os.getpid(),
            "at": datetime.now(UTC).isoformat(timespec="seconds")})


def read_status(cfg: TidewaterConfig, pipeline: str, host_pid: int | None) -> dict[str, Any] | None:
    """The pipeline's status as the running host (PID ``host_pid``) wrote it; None when that host wrote
    none (no host runs, or the file is from an earlier one)."""
    data = _read(host_dir(cfg) / "status" / f"{pipeline}.json")
    if data is None or host_pid is None or data.get("host_pid") != host_pid:
        return None
    return data


def forget_all(cfg: TidewaterConfig) -> None:
    """No pipeline wanted any more (``tidewater down``: the next host starts only what is asked again)."""
    for path in (host_dir(cfg) / "wanted").glob("*.json"):
        path.unlink(missing_ok=True)
