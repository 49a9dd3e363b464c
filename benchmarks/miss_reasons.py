"""Why a benchmark goal was missed, in the figures of the same scenario result (``benchmarks.results_table``
appends them to the measured value of a goal that is not met). Each reader returns "" when the result
does not hold the figures it needs."""

from __future__ import annotations

from typing import Any

Result = dict[str, Any]


def catch_up_minimal(r: Result) -> str:
    m = r["metrics"]
    same, minimal = m.get("d_same_work", {}).get("events_per_s"), m.get("b_baseline", {}).get("events_per_s")
    if not same or not minimal:
        return ""
    return (f"why: the same work as one hand-written PySpark script (every table the speed job writes) runs at "
            f"{same:,} events/s; the minimal job writes one table, at {minimal:,}")


def latency(rate: int) -> Any:
    def read(r: Result) -> str:
        batches = [q for key in (f"rate_{rate}", f"rate_{rate}_steady")
                   for q in ((r["metrics"].get(key) or {}).get("speed_job_batches") or {}).values()]
        if not batches:
            return ""
        slowest = max(batches, key=lambda q: q["mean_s"])
        return (f"why: an event waits for the next trigger ({r['settings'].get('trigger', '?')}), then for its "
                f"micro-batch: mean {slowest['mean_s']:.2f} s, max {slowest['max_s']:.2f} s at this rate")
    return read


def incremental(r: Result) -> str:
    m = r["metrics"]
    steady, rounds = m.get("steady_state") or {}, (m.get("incremental") or {}).get("rounds") or []
    span = str(steady.get("rounds", "")).split(" ")[0].split("-")
    if len(span) != 2 or not rounds:
        return ""
    used = rounds[int(span[0]) - 1:int(span[1])]
    steps = {k: sorted(x["steps_s"][k] for x in used)[len(used) // 2] for k in used[0]["steps_s"] if k != "ledger"}
    return "why: median " + ", ".join(f"{k} {v:.2f} s" for k, v in steps.items()) + " (publish: one MERGE into batch.<p>)"


def ledger(r: Result) -> str:
    inputs = r["metrics"].get("ledger_inputs") or {}
    rounds = (r["metrics"].get("incremental") or {}).get("rounds") or []
    if not inputs or not rounds:
        return ""
    parts = ", ".join(f"{name} {v['rows']:,} rows in {v['seconds']:.2f} s"
                      for name, v in sorted(inputs.items(), key=lambda kv: -kv[1]["seconds"]))
    return f"why: what it compares for the last round's {rounds[-1].get('windows', 0):,} windows, each read alone: {parts}"


def replay(r: Result) -> str:
    parts = r["metrics"].get("replay_segments") or {}
    first, later = parts.get("scenario_1_records"), parts.get("later_records")
    same = r["ratios"].get("replay over scenario 1's records/catch-up(1a)")
    if not first or same is None:
        return ""
    text = f"why: over scenario 1's {first['records']:,} records {first['events_per_s']:,} events/s ({same:.2f}x catch-up)"
    if later:
        top = sorted(later["steps_s"].items(), key=lambda kv: -kv[1])[:3]
        text += (f"; over the {later['records']:,} later ones (densest event-time minute in bronze "
                 f"{later['densest_event_minute']:,} events against {first['densest_event_minute']:,}), "
                 f"{later['events_per_s']:,} events/s, median micro-batch {later['median_batch_s']:.1f} s against "
                 f"{first['median_batch_s']:.1f} s; most seconds in " + ", ".join(f"{k} {v:.0f} s" for k, v in top))
    return text


def flink(r: Result) -> str:
    minimal, same = r["ratios"].get("minimal spark job/flink"), r["ratios"].get("same-work script/flink")
    if minimal is None:
        return ""
    return (f"why: in the same run the minimal Spark job (Kafka to one Delta table) reaches {minimal:.3f}x Flink"
            + (f", the same-work PySpark script {same:.3f}x" if same is not None else ""))


def alerts_latency(r: Result) -> str:
    batches = ((r["metrics"].get("latency") or {}).get("tidewater_micro_batches")) or {}
    if not batches.get("n"):
        return ""
    ops = batches.get("state_operators_ms") or {}
    updates = ", ".join(f"{k.split('#')[0]} {v['allUpdatesTimeMs']:.0f} ms" for k, v in ops.items())
    return (f"why: the {r['settings']['watermark']} watermark, and an alert is decided in the micro-batch after the "
            f"one that moves it; micro-batches median {batches['median_s']:.2f} s at 1,000 events/s ({updates})")
