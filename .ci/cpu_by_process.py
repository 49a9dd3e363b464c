"""CI evidence: CPU seconds per kind of process (speed jobs, the tests' Spark JVMs, Kafka brokers, ...).

Started in the background by ``.ci/run``; every 5 s it reads each process's CPU ticks from ``/proc``. On
SIGTERM it prints one line per kind (CPU seconds and share), so a run shows where its CPU went, not only
that both cores were busy. A process that started before the sampler counts from the first reading; one
that exits loses at most its last 5 s. Standard library only; any failure leaves the run alone.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path
from types import FrameType

HZ = os.sysconf("SC_CLK_TCK")
# A JVM's kind by its main class; a Spark driver JVM (SparkSubmit) takes the kind of the Python process above it.
JVM_KINDS = [("kafka broker", r" kafka\.Kafka\b"), ("derby", r"NetworkServerControl"), ("maven", r"plexus|maven"),
             ("thrift server", r"HiveThriftServer2"), ("kafka tool", r"kafka\.tools|ConsumerPerformance")]
PYTHON_KINDS = [("pytest", r"\bpytest\b"), ("speed job", r"spark_jobs\.speed\b"), ("job service", r"tidewater\.job_host"),
                ("tidewater cli", r"tidewater\.cli|bin/tidewater\b"), ("benchmark job", r"benchmarks\."),
                ("airflow", r"airflow"), ("superset", r"superset|gunicorn"), ("postgres", r"postgres"),
                ("chromium", r"chrom"), ("installers", r"\buv\b|\bpip\b|apt|dpkg")]


def _stat(pid: str) -> tuple[str, int, str]:
    """(parent pid, CPU ticks, start time) of one process."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2:].split()
    return fields[1], int(fields[11]) + int(fields[12]), fields[19]


def _cmdline(pid: str) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()


def _match(kinds: list[tuple[str, str]], cmd: str) -> str | None:
    return next((name for name, pattern in kinds if re.search(pattern, cmd)), None)


def kind_of(pid: str, cmd: str) -> str:
    if not cmd:
        return "kernel"
    if cmd.split(" ")[0].endswith("java"):
        jvm = _match(JVM_KINDS, cmd)
        if jvm or "SparkSubmit" not in cmd:
            return f"JVM: {jvm or 'other'}"
        parent = pid
        for _ in range(4):  # pyspark -> spark-submit (bash) -> java: the nearest Python ancestor
            parent = _stat(parent)[0]
            above = _cmdline(parent)
            if "python" in above.split(" ")[0]:
                return f"Spark JVM: {_match(PYTHON_KINDS, above) or 'other'}"
        return "Spark JVM: other"
    return f"process: {_match(PYTHON_KINDS, cmd) or _match(JVM_KINDS, cmd) or 'other'}"


def main() -> None:
    seen: dict[str, list] = {}  # "pid:start" -> [kind, ticks at first reading (0 if started after us), ticks]
    first = True

    def report(signum: int, frame: FrameType | None) -> None:
        totals: dict[str, float] = {}
        for kind, start, ticks in seen.values():
            totals[kind] = totals.get(kind, 0.0) + (ticks - start) / HZ
        whole = sum(totals.values()) or 1.0
        for kind, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
            if seconds >= 1:
                print(f"  {kind:32s} {seconds:7.0f} s  {100 * seconds / whole:4.1f}%")
        sys.stdout.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, report)
    while True:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                _parent, ticks, start = _stat(pid)
                key = f"{pid}:{start}"
                entry = seen.get(key)
                if entry is None or entry[0] in ("process: other", "kernel"):  # a launcher may exec into java
                    kind = kind_of(pid, _cmdline(pid))
                    entry = seen.setdefault(key, [kind, ticks if first else 0, ticks])
                    entry[0] = kind
                entry[2] = max(entry[2], ticks)
            except (OSError, ValueError, IndexError):
                continue
        first = False
        time.sleep(5)


if __name__ == "__main__":
    main()
