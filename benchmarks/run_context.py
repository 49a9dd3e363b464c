"""What a benchmark result must carry to be compared with another: how fast the machine itself was, and
the settings the stack ran with.

The same commit has run about half as fast on the same benchmark a day later: the code was the same, the
VM was not (platform string changed, Kafka's own consumer perf tool 0.49x, the bare PySpark baseline
0.55x). Without a machine yardstick a result cannot tell a slower machine from slower code, and without
the settings a run with ``TIDEWATER_JVM_OPTIONS`` set looks like any other.

* ``cpu_probe``: fixed single-thread work timed on this machine, at the run's start and end (the end one
  also shows whether the run's own load was gone). Compare ``python_mops`` and ``sha256_mb_s`` of two
  results before comparing their figures.
* ``effective_settings``: the stack's Spark section, JVM options, speed nice and every ``TIDEWATER_*``
  override in the environment (secret-looking names left out).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import asdict
from typing import Any

from lakehouse.config import TidewaterConfig

PROBE_LOOPS = 3_000_000        # pure-Python additions: the interpreter's speed on one core
PROBE_HASH_MB = 256            # SHA-256 over this many MiB: native code's speed on one core
_SECRET_WORDS = ("PASSWORD", "SECRET", "TOKEN", "KEY", "FERNET")


def _python_mops(loops: int) -> float:
    started, total = time.perf_counter(), 0
    for i in range(loops):
        total += i
    return round(loops / (time.perf_counter() - started) / 1e6, 2)


def _sha256_mb_s(megabytes: int) -> float:
    block, digest = b"\x5a" * (1 << 20), hashlib.sha256()
    started = time.perf_counter()
    for _ in range(megabytes):
        digest.update(block)
    digest.hexdigest()
    return round(megabytes / (time.perf_counter() - started), 1)


def cpu_probe(loops: int = PROBE_LOOPS, megabytes: int = PROBE_HASH_MB) -> dict[str, float]:
    """Best of three short timings of each (about 1 s in all); higher is faster."""
    return {"python_mops": max(_python_mops(loops) for _ in range(3)),
            "sha256_mb_s": max(_sha256_mb_s(megabytes) for _ in range(3)),
            "load_avg_1min": round(os.getloadavg()[0], 2)}


def overrides(environ: dict[str, str]) -> dict[str, str]:
    """The ``TIDEWATER_*`` variables set, except those whose names look like secrets."""
    return {k: v for k, v in sorted(environ.items())
            if k.startswith("TIDEWATER_") and not any(word in k for word in _SECRET_WORDS)}


def effective_settings(cfg: TidewaterConfig, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The settings a benchmark stack ran with (``cfg`` as loaded inside the isolated stack)."""
    return {"spark": asdict(cfg.spark), "jvm_options": cfg.jvm_options, "jvm_flags": cfg.jvm_flags,
            "env_overrides": overrides(dict(os.environ if environ is None else environ))}
