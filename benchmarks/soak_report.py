"""Flatness figures, charts and the result files of a soak (``benchmarks/results/<stamp>-soak[-quick].*``).

Flatness of a series (memory of a process, micro-batch duration, consumer lag) after the warm-up: the
median of its last 10% against the median of its first 10%, and its least-squares slope. It passes
when ``last <= first x RATIO + SLACK`` (the thresholds below, written into the result); a series that
grows without bound fails that over 30 minutes, while a fault's spike in the middle does not.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.s7_sustained import slope

# series -> (ratio, slack in the series' unit): the pass/fail threshold of flatness
THRESHOLDS: dict[str, tuple[float, float]] = {"pss_mb": (1.3, 128.0), "micro_batch_s": (1.5, 0.5)}
LAG_RATIO, LAG_SLACK_S = 2.0, 5.0  # lag: last <= first x 2 + what the producer sends in 5 s


def flatness(points: list[tuple[float, float]], span: tuple[float, float], ratio: float, slack: float) -> dict[str, Any]:
    """Flatness of ``points`` (seconds, value) within ``span``: (end of the warm-up, end of production)."""
    steady = [(t, v) for t, v in points if span[0] <= t <= span[1]]
    if len(steady) < 4:
        return {"samples": len(steady), "ok": None, "why": "too few samples after the warm-up"}
    k = max(1, len(steady) // 10)
    first, last = statistics.median(v for _, v in steady[:k]), statistics.median(v for _, v in steady[-k:])
    per_s = slope([(t, int(v * 1000)) for t, v in steady]) / 1000  # s7's slope takes integer values
    return {"samples": len(steady), "first_10pct_median": round(first, 2), "last_10pct_median": round(last, 2),
            "last_over_first": round(last / first, 3) if first else None, "slope_per_min": round(per_s * 60, 3),
            "threshold": f"last <= first x {ratio} + {slack}", "ok": last <= first * ratio + slack}


def flatness_figures(samples: list[dict[str, Any]], batches: list[tuple[float, float, int]], span: tuple[float, float],
                     rate: int) -> dict[str, Any]:
    """Flatness of every series between the end of the warm-up and the end of production (``span``, s)."""
    out: dict[str, Any] = {"pss_mb": {}, "span_s": span}
    names = sorted({n for s in samples for n in s.get("pss_mb", {})})
    ratio, slack = THRESHOLDS["pss_mb"]
    for name in names:
        series = [(s["t"], s["pss_mb"][name]) for s in samples if name in s.get("pss_mb", {})]
        figure = flatness(series, span, ratio, slack)
        figure["restarts"] = len({s["pid"][name] for s in samples if name in s.get("pid", {})}) - 1
        out["pss_mb"][name] = figure
    ratio, slack = THRESHOLDS["micro_batch_s"]
    out["micro_batch_s"] = flatness([(t, d) for t, d, _ in batches], span, ratio, slack)
    lag = [(s["t"], float(s["lag"])) for s in samples if s.get("lag") is not None]
    out["lag_records"] = flatness(lag, span, LAG_RATIO, rate * LAG_SLACK_S)
    return out


def failed_flatness(figures: dict[str, Any]) -> list[str]:
    """The series whose flatness failed (named as in the figures)."""
    failed = [f"pss_mb.{n}" for n, f in figures["pss_mb"].items() if f["ok"] is False]
    return failed + [k for k in ("micro_batch_s", "lag_records") if figures[k]["ok"] is False]


def charts(run: dict[str, Any], samples: list[dict[str, Any]], batches: list[tuple[float, float, int]],
           path: Path) -> None:
    """One PNG, three panels over time: memory per process, micro-batch duration, consumer lag; faults marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (memory, mb, lag) = plt.subplots(3, 1, figsize=(13, 11), sharex=True)
    names = sorted({n for s in samples for n in s.get("pss_mb", {})})
    palette = plt.get_cmap("tab20")
    for i, name in enumerate(names):
        pts = [(s["t"] / 60, s["pss_mb"][name]) for s in samples if name in s.get("pss_mb", {})]
        memory.plot(*zip(*pts, strict=True), label=name, linewidth=1, color=palette(i % 20))
    runs = [(s["t"] / 60, sum(s.get("task_runs_mb", {}).values())) for s in samples if "pss_mb" in s]
    if runs:
        memory.plot(*zip(*runs, strict=True), label="Airflow task runs (transient)", linewidth=0.8, color="black",
                 linestyle=":")
    memory.set_ylabel("PSS (MiB, with children)")
    if names:
        memory.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if batches:
        mb.plot([t / 60 for t, _, _ in batches], [d for _, d, _ in batches], ".", markersize=2)
    mb.set_ylabel("speed micro-batch (s)")
    pts = [(s["t"] / 60, s["lag"]) for s in samples if s.get("lag") is not None]
    if pts:
        lag.plot(*zip(*pts, strict=True), linewidth=1)
    lag.set_ylabel("consumer lag (records)")
    lag.set_xlabel("minutes since the producer started")
    for fault in run["faults"]:
        for ax in (memory, mb, lag):
            if fault["injected_s"] is not None:
                ax.axvline(fault["injected_s"] / 60, color="red", linestyle="--", linewidth=0.8)
        if fault["injected_s"] is not None:
            memory.annotate(fault["kind"], (fault["injected_s"] / 60, memory.get_ylim()[1]), fontsize=7, color="red",
                         rotation=90, va="top")
    for ax in (memory, mb, lag):  # the span judged for flatness: end of the warm-up to end of production
        for t in (run["settings"]["warm_up_s"], run["settings"]["seconds"]):
            ax.axvline(t / 60, color="grey", linestyle=":", linewidth=0.8)
    fig.suptitle(f"Tidewater soak {run['started_at']}: {run['settings']['rate']} events/s, seed {run['seed']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_files(run: dict[str, Any], samples: list[dict[str, Any]], batches: list[tuple[float, float, int]],
                out_dir: Path, stem: str) -> dict[str, str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"json": str(out_dir / f"{stem}.json"), "markdown": str(out_dir / f"{stem}.md"),
             "chart": str(out_dir / f"{stem}.png")}
    run["files"] = files
    # the figures first: a chart that cannot be drawn must not lose the result
    Path(files["json"]).write_text(json.dumps({**run, "samples": samples, "micro_batches": batches},
                                              indent=1, default=str))
    Path(files["markdown"]).write_text(markdown(run))
    charts(run, samples, batches, Path(files["chart"]))
    return files


def markdown(run: dict[str, Any]) -> str:
    s = run["settings"]
    lines = [f"# Tidewater soak {run['started_at']}: {'PASSED' if run['ok'] else 'FAILED'}", "",
             f"Commit `{run['git']['commit']}`{' (dirty tree)' if run['git']['dirty'] else ''}, seed {run['seed']}, "
             f"{s['rate']} events/s for {s['seconds']} s ({run['metrics']['events']:,} events, achieved "
             f"{run['metrics'].get('achieved_rate')}/s), {s['brokers']} brokers, batch DAG `{s['batch_schedule']}`, "
             f"supervisor `{s['supervisor_schedule']}`. {run.get('reason') or ''}", "",
             f"![charts]({Path(run['files']['chart']).name})", "", "## Faults", "",
             "| fault | target | planned s | injected s | recovered s | by | ok |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {f['kind']} | {f['target']} | {f['planned_s']} | {f['injected_s']} | {f['recovered_s']} | "
              f"{f['recovered_by']} | {f['ok']} |" for f in run["faults"]]
    lines += ["", "## Checks", "", "| check | expected | actual | ok |", "|---|---|---|---|"]
    lines += [f"| {c['name']} | {c['expected']} | {c['actual']} | {c['ok']} |" for c in run["checks"]]
    fl = run["flatness"]
    lines += ["", f"## Flatness (from the {s['warm_up_s']:.0f} s warm-up to the end of production; gating: "
              f"{s['flatness_gates']})", "",
              "| series | first 10% median | last 10% median | slope /min | threshold | ok |", "|---|---|---|---|---|---|"]
    rows = [(f"PSS {n} (MiB; restarts {f.get('restarts')})", f) for n, f in fl["pss_mb"].items()]
    rows += [("speed micro-batch (s)", fl["micro_batch_s"]), ("consumer lag (records)", fl["lag_records"])]
    lines += [f"| {name} | {f.get('first_10pct_median')} | {f.get('last_10pct_median')} | {f.get('slope_per_min')} | "
              f"{f.get('threshold')} | {f['ok']} |" for name, f in rows]
    lines += ["", "## Notes", "", *[f"* {n}" for n in run["notes"]], ""]
    return "\n".join(lines)
