"""What each benchmark goal reads from a result: its measured value, its ratio and whether it is met.

A reader takes one scenario's result (or a ``dag_run`` or soak result) and answers a ``Reading``, or None when the
result lacks the figures. ``benchmarks.results_table`` pairs each goal with its reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.s5_serving import GOALS_S as SERVING_GOALS
from benchmarks.s8_flat_cost import GOAL_LAST_OVER_FIRST
from benchmarks.s10_many_pipelines import GOAL_P99_S as MANY_P99_S
from benchmarks.s10_many_pipelines import GOAL_RSS_GIB as MANY_RSS_GIB

Result = dict[str, Any]
# what a goal reads from a result: (measured, ratio, met), or None when the result lacks the figures
Reading = tuple[str, str, bool | None]


def missed_because(read: Callable[[Result], Reading | None], reason: Callable[[Result], str]) -> Callable[[Result], Reading | None]:
    """``read``, with ``reason``'s figures after the measured value when the goal is missed."""
    def reading(r: Result) -> Reading | None:
        out = read(r)
        if out is None or out[2] is not False:
            return out
        because = reason(r)
        return (f"{out[0]}; {because}" if because else out[0], out[1], out[2])
    return reading


def _n(value: float) -> str:
    """1,234 for large figures, 1.23 for small ones."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"


def catch_up(r: Result) -> Reading | None:
    a, same = r["metrics"].get("a_tidewater", {}).get("events_per_s"), r["ratios"].get("a/d")
    if a is None or same is None:
        return None
    return f"{_n(a)} events/s", f"{same:.3f}x the same-work script", a >= 30_000 and same >= 0.9


def catch_up_minimal(r: Result) -> Reading | None:
    a, minimal = r["metrics"].get("a_tidewater", {}).get("events_per_s"), r["ratios"].get("a/b")
    if a is None or minimal is None:
        return None
    return f"{_n(a)} events/s", f"{minimal:.3f}x the minimal Spark job", minimal >= 0.8


def latency(rate: int, p50_max: float, p99_max: float, min_sent: float = 0) -> Callable[[Result], Reading | None]:
    """Both phases count: right after the job caught up, and ``_steady`` after as long again at the rate."""
    def read(r: Result) -> Reading | None:
        first, steady = r["metrics"].get(f"rate_{rate}"), r["metrics"].get(f"rate_{rate}_steady")
        if not first or first.get("p99_s") is None:
            return None
        runs = [m for m in (first, steady) if m and m.get("p99_s") is not None]
        text = "; steady ".join(f"p50 {m['p50_s']:.2f} s, p99 {m['p99_s']:.2f} s" for m in runs)
        sent = min(m["achieved_rate"] for m in runs)
        met = all(m["p50_s"] <= p50_max and m["p99_s"] <= p99_max for m in runs) and sent >= min_sent
        return f"{text}; {sent:,}/s sent", "", met
    return read


GOAL_BRONZE_EVENTS = 16_000_000  # the incremental and ledger goals hold at this bronze size (the full size's)


def at_goal_size(r: Result) -> bool:
    """Whether scenario 3 ran at the goal's bronze size: the full size's 16M events, plus the events that
    the scenarios before it left in the same stack's bronze (about 9M in a run of every scenario); not a
    run over a bigger bronze (``--batch-events``)."""
    events = r["metrics"].get("full", {}).get("events")
    return events is not None and 0.8 * GOAL_BRONZE_EVENTS <= events <= 2 * GOAL_BRONZE_EVENTS


def incremental(r: Result) -> Reading | None:
    """The warm incremental run at the goal's bronze size: the steady-state median where measured."""
    m = r["metrics"]
    steady, events = m.get("steady_state"), m.get("full", {}).get("events")
    if not at_goal_size(r):
        return None
    if steady:
        seconds, ratio, how = steady["median_seconds"], steady["ratio"], f"median of rounds {steady['rounds']}"
    elif m.get("incremental", {}).get("warm_median_seconds") is not None:
        seconds, ratio = m["incremental"]["warm_median_seconds"], r["ratios"].get("incremental/full (warm median)")
        how = "warm median"
    else:
        return None
    if ratio is None:
        return None
    at = f", {events / 1e6:,.0f}M bronze events" if events else ""
    return f"{seconds:.2f} s ({how}{at})", f"{ratio:.3f}x the full run", seconds <= 3 and ratio <= 0.2


def ledger(r: Result) -> Reading | None:
    """The reconciliation ledger's seconds per incremental round (the first round, on a cold JVM, left out)."""
    rounds = r["metrics"].get("incremental", {}).get("rounds") or [] if at_goal_size(r) else []
    seconds = sorted(x["steps_s"]["ledger"] for x in rounds[1:] if "ledger" in (x.get("steps_s") or {}))
    if not seconds:
        return None
    median = seconds[len(seconds) // 2]
    return f"median {median:.2f} s, worst {seconds[-1]:.2f} s over {len(seconds)} warm rounds", "", median <= 2


def full_vs_bare(r: Result) -> Reading | None:
    m, ratio = r["metrics"], r["ratios"].get("bare_pyspark/full (goal >= 0.8)")
    if ratio is None:
        return None
    return (f"full {m['full']['seconds']:.2f} s, bare job {m['bare_pyspark_full']['seconds']:.2f} s",
            f"{ratio:.3f}x", ratio >= 0.8)


def replay(r: Result) -> Reading | None:
    replay, ratio = r["metrics"].get("replay", {}), r["ratios"].get("replay/catch-up(1a)")
    if replay.get("events_per_s") is None:
        return None
    same = r["ratios"].get("replay over scenario 1's records/catch-up(1a)")  # like for like: the same records
    text = f"{ratio:.3f}x catch-up" if ratio is not None else ""
    if text and same is not None:
        text += f" ({same:.3f}x over scenario 1's own records)"
    return (f"{_n(replay['events_per_s'])} events/s over {replay['records']:,} records", text,
            ratio is not None and ratio >= 1.0)


def serving(r: Result) -> Reading | None:
    m = r["metrics"]
    if any(m.get(k, {}).get("p95_s") is None for k in SERVING_GOALS):
        return None
    text = ", ".join(f"{m[k]['p95_s']:.2f} s" for k in SERVING_GOALS)
    return text, "", all(m[k]["p95_s"] <= goal for k, goal in SERVING_GOALS.items())


def flink(r: Result) -> Reading | None:
    ratio, flink = r["ratios"].get("tidewater/flink"), r["metrics"].get("flink", {}).get("events_per_s")
    if ratio is None:
        return None
    return f"Flink {_n(flink)} events/s" if flink else "", f"{ratio:.3f}x Flink", ratio >= 0.5


def sustained(r: Result) -> Reading | None:
    rate = int((r.get("settings") or {}).get("rate") or 0) or next(
        (int(k.removeprefix("rate_")) for k in r["metrics"] if k.startswith("rate_")), 0)
    m = r["metrics"].get(f"rate_{rate}")
    if rate < 20_000 or not m or m.get("lag_growth_allowed") is None:
        return None
    return (f"lag at most {m['lag_max_after_warm_up']:,} records, growth {m['lag_growth_after_warm_up']:,} "
            f"({m['lag_growth_allowed']:,} allowed); {m['achieved_rate']:,}/s sent", "",
            m["lag_growth_after_warm_up"] < m["lag_growth_allowed"] and m["achieved_rate"] >= 0.95 * rate)


def _why(m: Result) -> str:
    """Scenario 10's measured reason, where the result holds it: busy cores and micro-batch demand."""
    load, demand = m.get("load"), m.get("demand") or {}
    if not load or demand.get("batch_seconds_per_second") is None:
        return ""
    return (f"; why: speed layer busy {load['speed_layer_busy_cores']:.2f} of {load['cores']} cores, micro-batches "
            f"median {demand['median_batch_s']:.2f} s, {demand['batch_seconds_per_second']:.1f} batch-s per s")


MANY_RATIOS = {"shared": ("shared_vs_per_pipeline", "one JVM per pipeline"), "cluster": ("cluster_vs_shared", "the shared host")}


def many(mode: str) -> Callable[[Result], Reading | None]:
    """Scenario 10 in one speed-host mode: the worst pipeline's p99 and the speed layer's peak RSS, and why
    where the goal is missed."""
    def read(r: Result) -> Reading | None:
        m = r["metrics"].get(mode)
        if not m or m.get("worst_p99_s") is None:
            return None
        n = len(m["pipelines"])
        met = n >= 10 and m["worst_p99_s"] <= MANY_P99_S and m["rss"]["peak_gib"] <= MANY_RSS_GIB
        key, other = MANY_RATIOS.get(mode, ("", ""))
        p99, rss = r["ratios"].get(f"worst_p99_{key}"), r["ratios"].get(f"peak_rss_{key}")
        ratio = f"p99 {p99:.3f}x, RSS {rss:.3f}x {other}" if p99 is not None and rss is not None else ""
        return (f"worst p99 {m['worst_p99_s']:.2f} s of {n} pipelines; peak RSS {m['rss']['peak_gib']:.2f} GiB"
                + ("" if met else _why(m)), ratio, met if mode == "shared" else None)
    return read


def flat(r: Result) -> Reading | None:
    flat = r["metrics"].get("flat", {})
    if flat.get("last_over_first") is None:
        return None
    return (f"{flat['first_10pct_s']:.2f} s -> {flat['last_10pct_s']:.2f} s per micro-batch",
            f"{flat['last_over_first']:.3f}x", flat["last_over_first"] <= GOAL_LAST_OVER_FIRST)


def dag(r: Result) -> Reading | None:
    with_service, without = r.get("with_service", {}), r.get("without_service", {})
    first = with_service.get("dag", {}).get("wall_seconds")
    if first is None:
        return None
    following = [run["wall_seconds"] for run in with_service.get("dag_next") or []]
    alone = without.get("dag", {}).get("wall_seconds")
    text = f"{first:.1f} s" + (f", next run {following[0]:.1f} s" if following else "")
    return text, f"{first / alone:.3f}x a JVM per task ({alone:.1f} s)" if alone else "", first <= 60


def skip(r: Result) -> Reading | None:
    seconds = r.get("with_service", {}).get("empty_skip_seconds")
    task = r.get("with_service", {}).get("dag", {}).get("tasks", {}).get("lift_rides.stage")
    if seconds is None:
        return None
    worst = max([seconds, *([task[1]] if task else [])])
    return f"{seconds:.2f} s on the command line" + (f", {task[1]:.1f} s as a DAG task" if task else ""), "", worst <= 5


def sql(r: Result) -> Reading | None:
    seconds = r.get("with_service", {}).get("sql_select_1_seconds")
    alone = r.get("without_service", {}).get("sql_select_1_seconds")
    if seconds is None:
        return None
    return f"{seconds:.2f} s", f"{seconds / alone:.3f}x without the job service ({alone:.2f} s)" if alone else "", seconds <= 2


def soak(r: Result) -> Reading | None:
    checks = r.get("checks") or []
    if not checks:
        return None
    s, m = r.get("settings", {}), r.get("metrics", {})
    passed = sum(bool(c.get("ok")) for c in checks)
    return (f"{passed} of {len(checks)} checks passed; {m.get('events', 0):,} events at {s.get('rate', 0):,}/s "
            f"for {s.get('seconds', 0) / 60:.0f} min", "", bool(r.get("ok")))
