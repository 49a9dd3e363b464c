"""Free ports for isolated stacks are picked outside the ephemeral range (``infra.services.ports``)."""

from __future__ import annotations

import socket

from infra.services.ports import (
    LOWEST,
    MIN_RANGE,
    bindable,
    ephemeral_range,
    free_port,
    free_port_block,
    ranges_outside,
)


def test_ranges_leave_out_the_ephemeral_range() -> None:
    assert ranges_outside((32768, 60999)) == [(LOWEST, 32767), (61000, 65535)]
    assert ranges_outside((32768, 60999), span=6) == [(LOWEST, 32762), (61000, 65530)]
    assert ranges_outside((1024, 65535)) == []  # no room: the caller falls back to the kernel's choice
    assert ranges_outside((LOWEST + MIN_RANGE - 1, 65000)) == []  # both gaps too small to pick from


def test_free_ports_are_bindable_and_outside_the_ephemeral_range() -> None:
    low, high = ephemeral_range()
    for _ in range(20):
        port = free_port()
        assert bindable(port)
        if ranges_outside((low, high)):
            assert not low <= port <= high, (port, low, high)
    base = free_port_block(6)
    assert all(bindable(base + i) for i in range(6))
    if ranges_outside((low, high), span=6):
        assert all(not low <= base + i <= high for i in range(6))


def test_a_port_in_use_is_not_bindable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert not bindable(s.getsockname()[1])
