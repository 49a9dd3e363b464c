"""A function run on a thread of its own inside a ``foreachBatch`` call: Spark runs the jobs of
several driver threads side by side, so independent writes of one micro-batch overlap."""

from __future__ import annotations

import time
from typing import Any


class Background:
    """Run ``fn(*args)`` on a thread of its own (Spark runs jobs of several threads side by side);
    ``join`` waits, re-raises its error and returns its seconds."""

    def __init__(self, fn: Any, *args: Any) -> None:
        import threading

        self.error: BaseException | None = None
        self.started, self.seconds = time.monotonic(), 0.0
        self.thread = threading.Thread(target=self._run, args=(fn, *args), daemon=True)
        self.thread.start()

    def _run(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except BaseException as exc:  # handed to the joining thread
            self.error = exc
        self.seconds = time.monotonic() - self.started

    def join(self) -> float:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.seconds
