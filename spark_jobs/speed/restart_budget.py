"""How often the speed job restarts one failed query before it gives up (pure; ``spark_jobs.speed.job``).

A restart is safe (every sink is idempotent) and usually needed twice per transient failure: after
the restart, Spark 4.1's Kafka source throws a NullPointerException while it re-runs the uncommitted
micro-batch (SPARK-55271; the batch commits first, so the next start succeeds). A budget per process
lifetime made two transient failures hours apart end a long-running job; a budget per time window
absorbs those and still ends a job whose query fails again right after each restart (a deterministic
failure spends the budget within minutes), so that its supervisor (Airflow) takes over.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

MAX_RESTARTS = 4  # of one query within RESTART_WINDOW_S; one more failure ends the job (exit 1)
RESTART_WINDOW_S = 600.0


class RestartBudget:
    """``allow()`` is True (and spends one restart) while fewer than ``limit`` restarts fell within the
    last ``window_s`` seconds."""

    def __init__(self, limit: int = MAX_RESTARTS, window_s: float = RESTART_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self.spent: deque[float] = deque()

    def allow(self) -> bool:
        now = self.clock()
        while self.spent and now - self.spent[0] >= self.window_s:
            self.spent.popleft()
        if len(self.spent) >= self.limit:
            return False
        self.spent.append(now)
        return True

    def used(self) -> int:
        """Restarts within the current window (for the job's log line)."""
        return len(self.spent)
