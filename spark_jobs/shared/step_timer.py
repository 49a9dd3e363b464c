"""Where a job's time goes: seconds per named step, reported as one stderr line."""

from __future__ import annotations

import sys
import time


class Steps:
    def __init__(self) -> None:
        self.mark = time.monotonic()
        self.seconds: dict[str, float] = {}

    def done(self, name: str) -> None:
        """The step ``name`` ended now (it began where the previous one ended)."""
        now = time.monotonic()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.mark
        self.mark = now

    def line(self) -> str:
        return ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())

    def report(self, what: str) -> None:
        print(f"{what}: {self.line()}", file=sys.stderr, flush=True)
