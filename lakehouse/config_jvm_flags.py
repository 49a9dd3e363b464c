"""The extra JVM flags of ``jvm_options``, as every JVM Tidewater starts receives them."""

from __future__ import annotations

import re
import shlex

# What a tiered JVM reserves for compiled code. A JVM that stops at C1 (``-XX:TieredStopAtLevel=1..3``)
# reserves 48 MB instead, which long-running Spark drivers filled: "VirtualMachineError: Out of space in
# CodeCache for adapters", after which Spark stopped its context (seen in CI's Thrift server and speed jobs).
CODE_CACHE_FLAG = "-XX:ReservedCodeCacheSize=240m"
_C1_ONLY = re.compile(r"^-XX:TieredStopAtLevel=[0-3]$")
_GC_CHOICE = re.compile(r"^-XX:\+Use\w+GC$")  # -XX:+UseSerialGC, -XX:+UseParallelGC, -XX:+UseG1GC, ...
# The collector of a Spark driver that Tidewater starts (batch, job service, CLI, speed jobs), unless
# ``jvm_options`` chooses one. G1, the JVM's default, costs its barriers on every task and concurrent
# marking threads beside them; with 2 cores, the parallel collector ran warm incremental batch rounds at
# 100M bronze events in 9.2-11.0 s against G1's 10.2-12.4 s, and a JVM's first round in 25.9 s against
# 35.6 s (docs/performance.md). The tests run every JVM with it.
DRIVER_COLLECTOR = "-XX:+UseParallelGC"


def jvm_flags(options: str) -> list[str]:
    """``options`` split as a shell would; a C1-only flag without a code cache size of its own gets the
    tiered JVM's cache size too. Raises ValueError on unbalanced quotes."""
    flags = shlex.split(options)
    if any(_C1_ONLY.match(f) for f in flags) and not any(f.startswith("-XX:ReservedCodeCacheSize=") for f in flags):
        flags.append(CODE_CACHE_FLAG)
    return flags


def selects_gc(flags: list[str]) -> bool:
    """True if ``flags`` choose a garbage collector: a JVM given a second choice refuses to start
    ("Conflicting collector combinations"), so a JVM's own default choice must then be left out."""
    return any(_GC_CHOICE.match(f) for f in flags)


def driver_flags(flags: list[str]) -> list[str]:
    """``flags`` for a Spark driver: with ``DRIVER_COLLECTOR`` first unless they choose a collector."""
    return flags if selects_gc(flags) else [DRIVER_COLLECTOR, *flags]
