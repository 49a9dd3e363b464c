"""The chart of ``tidewater whatif``: per candidate delay, the share of events dropped (and of windows
wrong) against the target, and how long after their end windows became final (p50, p95). A PNG,
drawn on a bare matplotlib ``Figure`` (the Agg canvas: no display, and no pyplot state shared between the
job service's threads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_jobs.analysis.whatif_report import duration_text


def write_chart(report: dict[str, Any], path: Path) -> Path:
    from matplotlib.figure import Figure

    rows = report["delays"]
    x = [r["delay_seconds"] for r in rows]
    fig = Figure(figsize=(8, 6.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(x, [r["missed_share"] * 100 for r in rows], "o-", color="tab:red", label="events dropped (late or future-stamped)")
    top.plot(x, [r["wrong_share"] * 100 for r in rows], "s--", color="tab:orange", label="windows wrong")
    top.axhline(report["target"] * 100, color="grey", linestyle=":", label=f"target {report['target'] * 100:g}%")
    top.set_ylabel("% of events / windows")
    top.set_yscale("symlog", linthresh=0.1)  # linear near 0, logarithmic above 0.1%
    top.set_ylim(bottom=0)
    bottom.plot(x, [_minutes(r["finality_p50_seconds"]) for r in rows], "o-", color="tab:blue", label="p50")
    bottom.plot(x, [_minutes(r["finality_p95_seconds"]) for r in rows], "s--", color="tab:purple", label="p95")
    bottom.set_ylabel("window end -> final (minutes)")
    bottom.set_xlabel("watermark delay")
    bottom.set_xscale("log")
    bottom.set_xticks(x, [duration_text(s) for s in x])
    bottom.minorticks_off()
    for ax in (top, bottom):
        ax.axvline(report["watermark_seconds"], color="black", alpha=0.3, linewidth=6, label="watermark now")
        if report["suggested_delay_seconds"] is not None:
            ax.axvline(report["suggested_delay_seconds"], color="tab:green", linestyle="--", label="suggested")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    top.set_title(f"tidewater whatif {report['pipeline']}: {report['events']:,} events, {report['window']} windows")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def _minutes(seconds: float | None) -> float:
    return float("nan") if seconds is None else seconds / 60
