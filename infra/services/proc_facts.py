"""Facts about local processes from ``/proc``: start time, liveness (a zombie is not alive), groups."""

from __future__ import annotations

import os
from pathlib import Path


def start_time(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks after boot (``/proc/<pid>/stat`` field 22); None if gone."""
    fields = stat_fields(pid)
    return fields[19] if len(fields) > 19 else None


def stat_fields(pid: int | str) -> list[str]:
    """Fields of ``/proc/<pid>/stat`` after the command name: [state, ppid, pgrp, ...]; [] if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return []


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = stat_fields(pid)  # a zombie is not alive
    return bool(fields) and fields[0] != "Z"


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process is in process group ``pgid``. ``killpg(pgid, 0)``
    is not enough: an exited group leader that its starter has not reaped yet still answers it."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat_fields(entry.name)
            if fields and fields[0] != "Z" and int(fields[2]) == pgid:
                return True
    return False
