"""Benchmark sizes. ``quick`` is the CI smoke size; ``medium`` a reduced full run; ``full`` the issue's sizes."""

from __future__ import annotations

from dataclasses import asdict, dataclass

# scenario 10's speed-layer modes (benchmarks/s10_many_pipelines.py); the quick size runs the first only
MANY_MODES = ("shared", "per_pipeline", "cluster")


@dataclass(frozen=True)
class Sizes:
    name: str
    catchup_events: int        # scenario 1 (and 6): pre-filled topic
    sensors: int
    latency_rates: tuple[int, ...]   # scenario 2: produce rates, events/s
    latency_seconds: int             # scenario 2: seconds per rate
    batch_events: int          # scenario 3 (and 4): bronze events
    late_fraction: float       # scenario 3: share of windows touched by late data
    serving_queries: int       # scenario 5: repetitions per query, one client
    concurrent_rounds: int     # scenario 5: queries per client of the concurrent clients
    sustained_rate: int        # scenario 7: events/s held for sustained_seconds
    sustained_seconds: int
    flat_events: int           # scenario 8: events through the speed layer for the flat-cost figure
    incremental_rounds: int    # scenario 3: incremental runs (the first on a JVM that has not run one yet)
    steady_rounds: int         # scenario 3: the last incremental runs whose median is the long-running service's
                               # steady state, judged against a full run after them (0: not measured)
    full_rounds: int           # scenario 3: full run + bare job pairs (the second on a warm JVM)
    serving_warm_up_s: int     # scenario 5: seconds of the query mix on the server just started ("cold_start")
    alerts_events: int         # scenario 9: pre-filled topic that both alert engines read
    alerts_watermark: str      # scenario 9: the bench pipeline's watermark, in both engines
    alerts_latency_seconds: int  # scenario 9: seconds at 1,000 events/s whose alerts are timed (plus the watermark)
    many_pipelines: int        # scenario 10: generated pipelines per speed-host mode
    many_rate: int             # scenario 10: events/s fed to each pipeline
    many_seconds: int          # scenario 10: seconds of unmeasured load, then as many measured
    many_modes: tuple[str, ...] = MANY_MODES  # scenario 10: the speed-layer modes run, in order

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


SIZES = {
    "quick": Sizes("quick", 30_000, 300, (1_000,), 15, 60_000, 0.01, 5, 2, 1_000, 20, 60_000, 2, 0, 1, 10, 30_000, "20 seconds", 15, 3, 1_000, 15, MANY_MODES[:1]),
    "medium": Sizes("medium", 1_000_000, 1_000, (1_000, 10_000), 60, 2_000_000, 0.01, 20, 20, 10_000, 180, 2_000_000, 3, 0, 2, 30, 300_000, "1 minute", 60, 6, 1_000, 60),
    "full": Sizes("full", 5_000_000, 1_000, (1_000, 10_000), 120, 16_000_000, 0.01, 30, 30, 20_000, 600, 20_000_000, 12, 3, 2, 30, 1_000_000, "2 minutes", 120, 10, 1_000, 120),
}
