"""Free local ports for isolated stacks (tests, benchmarks, the soak) that stay free while their
service is down.

A port that the kernel hands out for ``bind(0)`` comes from the ephemeral range
(``net.ipv4.ip_local_port_range``, 32768-60999 by default). Outgoing connections take their local ports
from that same range. So a service restarted on such a port can find it taken: by another process's
connection, or by a client that kept retrying a connect to the port while the service was down. On Linux
such a client can connect to itself ("TCP self-connect": the kernel picks the destination port as the
local one). A CI soak has lost its Thrift server that way: after the kill -9, `tidewater up --only
thrift_server` failed in `TServerSocket`'s bind. The ports are therefore picked outside the ephemeral
range, at random. Configured ports (tidewater.yml: 9092, 10000, ...) are below it anyway.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)  # Linux's default, when the file cannot be read
LOWEST = 10_000  # above the well-known ports and the common services' defaults (9092, 9083, 8080, ...)
MIN_RANGE = 1_000  # a gap smaller than this is not worth picking from


def ephemeral_range() -> tuple[int, int]:
    try:
        low, high = (int(x) for x in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def ranges_outside(ephemeral: tuple[int, int], span: int = 1) -> list[tuple[int, int]]:
    """The ranges of first ports for ``span`` consecutive ports, all outside ``ephemeral`` (inclusive
    bounds, each at least ``MIN_RANGE`` long); empty if the ephemeral range leaves no such room."""
    low, high = ephemeral
    candidates = [(LOWEST, low - span), (max(high + 1, LOWEST), 65536 - span)]
    return [(a, b) for a, b in candidates if b - a + 1 >= MIN_RANGE]


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(span: int = 1, attempts: int = 200) -> int:
    """A port (the first of ``span`` consecutive ones) that is free now and outside the ephemeral range;
    the kernel's choice (``bind(0)``, inside it) only if this machine's range leaves no room outside."""
    ranges = ranges_outside(ephemeral_range(), span)
    rng = random.SystemRandom()  # two stacks started at the same time draw different ports
    sizes = [b - a + 1 for a, b in ranges]
    for _ in range(attempts if ranges else 0):
        a, b = rng.choices(ranges, weights=sizes)[0]
        port = rng.randint(a, b)
        if all(bindable(port + i) for i in range(span)):
            return port
    for _ in range(attempts):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + span <= 65536 and all(bindable(port + i) for i in range(1, span)):
            return port
    raise OSError(f"no {span} consecutive free ports found on 127.0.0.1")


def free_port_block(size: int) -> int:
    """The first of ``size`` consecutive ports that are all free right now (e.g. a Kafka cluster's)."""
    return free_port(span=size)
