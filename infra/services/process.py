"""Detached local processes with PID files: start, liveness, graceful stop.

Every service and detached job that Tidewater starts is recorded as ``run/<name>.pid`` under the
data folder, with its output in ``logs/<name>.log``. The file holds the PID, a command-line marker
and the start time (``/proc/<pid>/stat`` field 22): it names our process only if both match and the
PID is no kernel thread, else (gone, PID reused) not running. A stop never signals group 0 or 1,
the caller's own group or the caller.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from infra.services.proc_facts import pid_alive, start_time, stat_fields
from lakehouse.errors import ServiceError

_PF_KTHREAD = 0x00200000  # /proc/<pid>/stat flags: a kernel thread


@dataclass(frozen=True)
class ManagedProcess:
    name: str
    run_dir: Path
    log_dir: Path

    @property
    def pid_file(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.log_dir / f"{self.name}.log"

    def pid(self) -> int | None:
        """PID of the live process, or None (stale PID files are removed)."""
        return self._live_pid(locked=False)

    def _live_pid(self, locked: bool) -> int | None:
        """``pid()``; ``locked``: the caller holds ``start_lock`` (a second flock of this process on the
        file would wait for the first forever)."""
        pid = self._recorded_pid()
        if pid is None:
            return None
        if not _owned(pid, self.pid_file):
            with contextlib.nullcontext() if locked else self.start_lock():  # unless a start replaced it meanwhile
                if self._recorded_pid() == pid:
                    self.pid_file.unlink(missing_ok=True)
            return None
        return pid

    def running(self) -> bool:
        return self.pid() is not None

    @contextlib.contextmanager
    def start_lock(self) -> Iterator[None]:
        """``flock`` on ``run/<name>.start.lock`` while a start checks the PID file, spawns and writes it.
        Without it, two ``tidewater speed start`` at once both spawned a job: the one that lost the job's
        own query lock exited, the PID file could name it, both commands failed, and the job that ran was
        one no ``speed stop`` could find. The kernel drops the lock when its holder dies."""
        with open(self.run_dir / f"{self.name}.start.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def started_at(self) -> float | None:
        """When the live process started (epoch seconds: its PID file is written at the start), or None."""
        if self.pid() is None:
            return None
        try:
            return self.pid_file.stat().st_mtime
        except FileNotFoundError:
            return None

    def start(self, argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None,
              marker: str | None = None, nice: int = 0) -> int:
        """Start ``argv`` detached (own session), append output to the log, write the PID file.
        ``marker``: a part of the command line that survives an ``exec`` by a launcher script
        (default: the longest argument), used to tell our process from a reused PID. ``nice``: the
        CPU priority below everything else's (``lower_priority``)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self.start_lock():  # two starts at once: the second finds the first's PID file, spawns nothing
            existing = self._live_pid(locked=True)
            if existing:
                return existing
            with open(self.log_file, "ab") as log:
                proc = subprocess.Popen(
                    [*(["nice", "-n", str(nice)] if nice else []), *argv], stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True,
                )
            self.pid_file.write_text(f"{proc.pid}\n{marker or _marker(argv)}\n{start_time(proc.pid) or ''}\n")
        if nice:
            lower_priority(proc.pid, nice)
        return proc.pid

    def stop(self, timeout: float = 30.0, sig: int = signal.SIGTERM, group: bool = True) -> bool:
        """Send ``sig`` to the process group (or, ``group=False``, to the leader only, which then
        shuts its own children down), wait, then SIGKILL the group. True if something was stopped."""
        pid = self.pid()
        if pid is None:
            return False
        _signal(pid, sig, group)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.2)
        if pid_alive(pid) and _owned(pid, self.pid_file):
            _signal(pid, signal.SIGKILL, True)
            wait_until(lambda: not pid_alive(pid), 10)
        with self.start_lock():  # a start since the process ended wrote its own PID file: that one stays
            if self._recorded_pid() == pid:
                self.pid_file.unlink(missing_ok=True)
        return True

    def _recorded_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None

    def log_size(self) -> int:
        """Current size of the log, to read only what a new start writes (``log_since``)."""
        try:
            return self.log_file.stat().st_size
        except FileNotFoundError:
            return 0

    def log_since(self, offset: int) -> str:
        try:
            with open(self.log_file, "rb") as fh:
                fh.seek(offset)
                return fh.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def lower_priority(session_leader: int, nice: int) -> None:
    """Give a detached process's whole session less CPU than everything else when the cores are busy.
    ``nice -n`` alone (set at the start) does nothing against processes of other sessions where the
    kernel groups the scheduling by session (``/proc/sys/kernel/sched_autogroup_enabled``, the default
    on most distributions): each session then gets an equal share whatever its processes' nice
    values, so the session's own weight is lowered too. Best effort: without autogroup (no file) the
    per-process nice is what counts."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{session_leader}/autogroup").write_text(f"{nice}\n")


def _marker(argv: Sequence[str]) -> str:
    """A stable fragment of the command line, used to detect PID reuse."""
    return max((a for a in argv), key=len)[-120:]


def _owned(pid: int, pid_file: Path) -> bool:
    """``pid`` is the process this PID file recorded: alive, no kernel thread, same start time and
    the marker on its command line. A legacy file without a start time needs the marker itself."""
    fields = stat_fields(pid) if pid > 1 else []
    if len(fields) < 20 or fields[0] == "Z" or int(fields[6]) & _PF_KTHREAD:
        return False
    try:
        lines = pid_file.read_text().splitlines()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, PermissionError):
        return False
    marker = lines[1].strip() if len(lines) > 1 else ""
    recorded = lines[2].strip() if len(lines) > 2 else ""
    if not recorded:
        return bool(marker) and marker in cmdline
    # an empty command line with the recorded start time is our process between fork and exec
    # (e.g. spark-submit's scripts exec'ing java), not a reused PID
    return recorded == fields[19] and (not cmdline.strip() or marker in cmdline)


def _signal(pid: int, sig: int, group: bool) -> None:
    """Signal ``pid``'s process group (``group``) or ``pid`` alone. Never group 0 or 1 (a kernel
    thread's or init's), never the caller's own group (only ``pid`` then), never the caller itself."""
    if pid <= 1 or pid == os.getpid():
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        pgid = os.getpgid(pid) if group else 0
        if pgid > 1 and pgid != os.getpgrp():
            return os.killpg(pgid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return check()


def start_healthy(proc: ManagedProcess, argv: Sequence[str], healthy: Callable[[], bool], timeout: float,
                  failure: str, tail: int = 15, interval: float = 0.5, env: dict[str, str] | None = None,
                  cwd: Path | None = None, marker: str | None = None) -> int:
    """Start a service's process and wait until ``healthy()``: the one start path of the metastore, the
    Thrift server and the job service (Kafka starts its nodes all at once: a quorum needs a majority up
    before any node is healthy). A process that exits or a timeout raises ``failure`` with the log's tail."""
    pid = proc.start(argv, env=env, cwd=cwd, marker=marker)
    if not wait_until(lambda: healthy() or not proc.running(), timeout, interval) or not proc.running():
        raise ServiceError(f"{failure}; log {proc.log_file}:\n{proc.tail(tail)}")
    return pid

