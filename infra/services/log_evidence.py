"""What a failed job's log says about why, kept short: for error messages and test failures, before a
test stack's folder (and the log in it) is deleted. Pure."""

from __future__ import annotations

# lines kept: the job's own step lines, Spark's ERROR lines, Python and Java error lines, and the JVM's
# own banner when it dies of a fatal error (native crash) or runs out of memory
KEEP = ("speed:", " ERROR ", "Traceback", "File \"", "Error", "Exception", "Caused by", "fatal error",
        "SIGSEGV", "SIGBUS", "Shutdown hook called", "Killed")


def job_evidence(log: str, head: int = 2000, tail: int = 3000) -> str:
    """The error lines of ``log`` (stack frames and warnings left out) and its last three micro-batch
    lines: the first ``head`` characters (where the first failure, the cause, is) and the last ``tail``."""
    lines = log.splitlines()
    errors = [line for line in lines if any(k in line for k in KEEP) and not line.lstrip().startswith("at ")
              and " WARN " not in line]
    last_batches = [line for line in lines if line.startswith("stream: batch")][-3:]
    text = "\n".join([*errors, *last_batches])
    return text if len(text) <= head + tail else f"{text[:head]}\n[...]\n{text[-tail:]}"
