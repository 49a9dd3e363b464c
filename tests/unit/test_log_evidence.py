"""What a failed job's log keeps for its error message (pure)."""

from __future__ import annotations

import pytest

from infra.services.log_evidence import job_evidence

pytestmark = pytest.mark.unit

LOG = """26/11/27 16:20:01 INFO SparkContext: Running Spark version 4.1.1
26/11/27 16:20:02 WARN NativeCodeLoader: Unable to load native-hadoop library
stream: batch 7: parse 0.4s, speed 0.6s
26/11/27 16:20:05 ERROR Executor: Exception in task 0.0 in stage 9.0 (TID 12)
java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)
# A fatal error has been detected by the Java Runtime Environment:
#  SIGSEGV (0xb) at pc=0x00007f, pid=4242
stream: batch 8: parse 0.5s, speed 0.7s
Traceback (most recent call last):
  File "/repo/spark_jobs/speed.py", line 86, in supervise
py4j.protocol.Py4JNetworkError: Error while sending or receiving
"""


def test_keeps_the_cause_and_the_last_batches_without_frames_or_warnings() -> None:
    kept = job_evidence(LOG).splitlines()
    assert "26/11/27 16:20:05 ERROR Executor: Exception in task 0.0 in stage 9.0 (TID 12)" in kept
    assert "java.lang.OutOfMemoryError: Java heap space" in kept
    assert "# A fatal error has been detected by the Java Runtime Environment:" in kept
    assert "#  SIGSEGV (0xb) at pc=0x00007f, pid=4242" in kept
    assert "py4j.protocol.Py4JNetworkError: Error while sending or receiving" in kept
    assert kept[-2:] == ["stream: batch 7: parse 0.4s, speed 0.6s", "stream: batch 8: parse 0.5s, speed 0.7s"]
    assert not any("WARN" in line or line.lstrip().startswith("at ") or "INFO" in line for line in kept)


def test_a_long_log_keeps_its_head_and_its_tail() -> None:
    log = "\n".join(f"26/11/27 16:20:{i % 60:02d} ERROR Job: failure {i}" for i in range(500))
    kept = job_evidence(log, head=200, tail=300)
    assert kept.startswith("26/11/27 16:20:00 ERROR Job: failure 0") and "failure 499" in kept and "[...]" in kept
    assert len(kept) <= 200 + 300 + len("\n[...]\n")
