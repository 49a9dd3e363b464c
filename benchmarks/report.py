"""Results of one run -> ``<name>.json``, ``<name>.md`` (summary table) and PNG charts (matplotlib)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def headline(result: dict[str, Any]) -> list[tuple[str, Any]]:
    """The figures worth a table row: events/s, seconds and percentiles found in the metrics."""
    rows = []
    for part, metrics in result["metrics"].items():
        if not isinstance(metrics, dict):
            continue
        for key in ("events_per_s", "seconds", "p50_s", "p95_s", "p99_s", "achieved_rate", "lag_max_after_warm_up",
                    "lag_slope_per_s"):
            if key in metrics and metrics[key] is not None:
                rows.append((f"{part}.{key}", metrics[key]))
    return rows


def _yardstick(run: dict[str, Any]) -> list[str]:
    """The machine's own speed (compare it before comparing two runs) and the stack's settings."""
    probes = {"start": run["machine"].get("cpu_probe"), "end": run.get("cpu_probe_at_end")}
    settings = run.get("settings")
    lines = [f"CPU probe at the {phase} (higher is faster): {json.dumps(v)}." for phase, v in probes.items() if v]
    return [*lines, f"Stack settings: `{json.dumps(settings)}`."] if settings else lines


def markdown(run: dict[str, Any], charts: list[str]) -> str:
    m = run["machine"]
    lines = [f"# Tidewater benchmark run {run['started_at']} ({run['size']['name']} size)", "",
             f"Machine: {m['cores']} cores, {m['memory_gib']} GiB, load average at start {m['load_avg_at_start']}, "
             f"Python {m['python']}, {m['java']}, versions {m['versions']}, platform {m.get('platform')}.",
             *_yardstick(run),
             f"Code: git commit {(run.get('git') or {}).get('commit')}"
             f"{' with uncommitted changes' if (run.get('git') or {}).get('dirty') else ''}.", "",
             "| # | scenario | status | ratios | key figures | checks passed | seconds |",
             "|---|---|---|---|---|---|---|"]
    for r in run["results"]:
        ratios = ", ".join(f"{k} = {_fmt(v)}" for k, v in r["ratios"].items()) or "-"
        figures = "; ".join(f"{k} {_fmt(v)}" for k, v in headline(r)) or "-"
        passed = f"{sum(c['ok'] for c in r['checks'])}/{len(r['checks'])}"
        lines.append(f"| {r['id']} | {r['name']} | **{r['status']}** | {ratios} | {figures} | {passed} | {r['seconds']} |")
    lines += ["", "## Settings and notes", ""]
    for r in run["results"]:
        lines.append(f"- **{r['id']}. {r['name']}**: settings `{json.dumps(r['settings'])}`")
        lines += [f"  - {n.splitlines()[0][:400]}" for n in dict.fromkeys(r["notes"]) if n.strip()]
        lines += [f"  - check FAILED: {c['name']}: expected {c['expected']}, got {c['actual']}"
                  for c in r["checks"] if not c["ok"]]
    lines += ["", *[f"![{Path(c).stem}]({Path(c).name})" for c in charts], ""]
    return "\n".join(lines)


def _save(fig: Any, path: Path) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def charts(run: dict[str, Any], folder: Path, stem: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    by_id = {r["id"]: r for r in run["results"] if r["status"] != "skipped"}
    bars: list[tuple[str, float]] = []
    for sid, parts in ((1, ("a_tidewater", "b_baseline", "c_consumer_perf")), (4, ("replay",)), (6, ("flink",)), (9, ("tidewater", "flink"))):
        for part in parts:
            eps = by_id.get(sid, {}).get("metrics", {}).get(part, {}).get("events_per_s")
            if eps:
                bars.append((f"s{sid} {part}", float(eps)))
    if bars:
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.barh([b[0] for b in bars], [b[1] for b in bars], color="#2b7bba")
        for i, (_, value) in enumerate(bars):
            ax.text(value, i, f" {value:,.0f}", va="center", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("events / s, log scale (same run, same machine)")
        ax.set_title("Catch-up throughput")
        out.append(_save(fig, folder / f"{stem}-throughput.png"))
    lat = by_id.get(2, {}).get("metrics", {})
    rates = [(k, v) for k, v in lat.items() if isinstance(v, dict) and "p50_s" in v]
    if rates:
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.25
        for i, pct in enumerate(("p50_s", "p95_s", "p99_s")):
            ax.bar([j + i * width for j in range(len(rates))], [v[pct] or 0 for _, v in rates], width, label=pct[:-2])
        labels = [f"asked {k.removeprefix('rate_').replace('_', '/s ')}{'' if '_' in k.removeprefix('rate_') else '/s'}"
                  f"\nsent {v.get('achieved_rate', 0):,.0f}/s" for k, v in rates]
        ax.set_xticks([j + width for j in range(len(rates))], labels)
        ax.set_ylabel("seconds from produce to visible")
        ax.set_title("End-to-end latency")
        ax.legend()
        out.append(_save(fig, folder / f"{stem}-latency.png"))
    series = by_id.get(8, {}).get("metrics", {}).get("flat", {}).get("series") or []
    if series:
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([h / 1e6 for h, _ in series], [d for _, d in series], "o-", markersize=3, color="#2b7bba")
        ax.set_xlabel("history already written (million bronze rows) when the micro-batch ran")
        ax.set_ylabel("micro-batch seconds")
        ax.set_ylim(bottom=0)
        ax.set_title("Flat cost: micro-batch duration as history grows")
        out.append(_save(fig, folder / f"{stem}-flat-cost.png"))
    return out


def write_report(run: dict[str, Any], folder: Path, stem: str) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
    json_path.write_text(json.dumps(run, indent=2, default=str))  # first: a chart failure must not lose the data
    try:
        pngs = charts(run, folder, stem)
    except ImportError as exc:  # matplotlib is in the `bench` extra (make bench installs it)
        print(f"bench: no charts ({exc}); install with: .venv/bin/pip install -e '.[bench]'")
        pngs = []
    files = {"json": str(json_path), "markdown": str(md_path), "charts": pngs}
    json_path.write_text(json.dumps({**run, "files": files}, indent=2, default=str))
    md_path.write_text(markdown(run, pngs))
    return files

