"""Scenario 10's load figures: the speed layer's resident memory and CPU time, and the machine's busy cores.

``LoadSampler`` samples, every ``EVERY_S`` on a thread, the resident memory of the speed layer's process
trees (every speed process, its JVM, and in the ``cluster`` mode the master, the workers and their
executors) and keeps its peak. ``mark()`` takes a snapshot at once: the CPU time each process of those
trees has used (``utime + stime`` of ``/proc/<pid>/stat``, plus ``cutime + cstime``: the children it
has reaped, such as a ``chmod`` a JVM started) and the machine's busy time (``/proc/stat``: every state
but idle and iowait). ``busy_cores(a, b)`` turns two marks into CPU seconds per wall second.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.services.proc_facts import stat_fields

EVERY_S = 2.0
GIB = 1024**3
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
UTIME, CUTIME = 11, 13  # indexes of utime (then stime) and cutime (then cstime) in ``stat_fields``


def process_tree(roots: list[int]) -> list[int]:
    """``roots`` and all their descendants (one pass over ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        fields = stat_fields(entry) if entry.isdigit() else []
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and of the children it has reaped; 0 when it is gone."""
    fields = stat_fields(pid)
    if len(fields) <= CUTIME + 1:
        return 0.0
    return sum(int(fields[i]) for i in (UTIME, UTIME + 1, CUTIME, CUTIME + 1)) / TICKS_PER_S


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy since boot (``/proc/stat``: all but idle, iowait)."""
    first = Path("/proc/stat").read_text().splitlines()[0].split()[1:9]  # user nice system idle iowait irq softirq steal
    ticks = [int(v) for v in first]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICKS_PER_S


@dataclass(frozen=True)
class Mark:
    at: float  # time.monotonic()
    cpu_by_pid: dict[int, float]
    machine_busy_s: float


class LoadSampler:
    """RSS every ``EVERY_S`` on a thread; CPU snapshots on ``mark()``. ``roots()``: the speed layer's
    root processes now (they may change: a speed job per pipeline starts, a host restarts)."""

    def __init__(self, roots: Callable[[], list[int]]) -> None:
        self.roots = roots
        self.samples: list[int] = []
        self.seen_cpu: dict[int, float] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.wait(EVERY_S):
            self._sample()

    def _sample(self) -> None:
        pids = process_tree(self.roots())
        with self.lock:
            self.samples.append(sum(rss_bytes(pid) for pid in pids))
            for pid in pids:  # a process that ends keeps the CPU time it was last seen with
                self.seen_cpu[pid] = max(self.seen_cpu.get(pid, 0.0), cpu_seconds(pid))

    def mark(self) -> Mark:
        self._sample()
        with self.lock:
            return Mark(time.monotonic(), dict(self.seen_cpu), machine_busy_seconds())

    def stop(self) -> dict[str, Any]:
        self.stopping.set()
        self.thread.join(timeout=30)
        peak = max(self.samples, default=0)
        return {"peak_gib": round(peak / GIB, 2), "median_gib": round(sorted(self.samples)[len(self.samples) // 2] / GIB, 2)
                if self.samples else None, "samples": len(self.samples)}


def busy_cores(start: Mark, end: Mark) -> dict[str, Any]:
    """Between two marks: the speed layer's CPU seconds per wall second (a process born after ``start``
    counts from 0), the machine's, and the machine's cores."""
    wall = max(end.at - start.at, 1e-3)
    speed_cpu = sum(cpu - start.cpu_by_pid.get(pid, 0.0) for pid, cpu in end.cpu_by_pid.items())
    return {"window_s": round(wall, 1), "speed_layer_busy_cores": round(speed_cpu / wall, 2),
            "machine_busy_cores": round((end.machine_busy_s - start.machine_busy_s) / wall, 2),
            "cores": os.cpu_count()}
