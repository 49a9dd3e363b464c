"""Chart of one DAG-run benchmark result: each task's duration in the ``tidewater_batch`` run without and
with the job service, side by side, plus the run's wall time.

``python -m benchmarks.dag_chart benchmarks/results/<stamp>-dag_run.json [--out PNG]`` (default: the
JSON's name with ``.png``). ``dag_run`` calls it after each run when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HALVES = (("without_service", "without the job service (a JVM per task)"),
          ("with_service", "with the job service (one warm driver)"))


def rows(result: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(label, seconds without, seconds with) per task that ran or skipped in either half, then the wall time."""
    before, after = (result[k]["dag"] for k, _ in HALVES)
    tasks = sorted(t for t in {*before["tasks"], *after["tasks"]}
                   if max(before["tasks"].get(t, ["", 0])[1], after["tasks"].get(t, ["", 0])[1]) > 0)
    out = []
    for task in tasks:
        state = after["tasks"].get(task, before["tasks"].get(task))[0]
        out.append((f"{task} ({state})", before["tasks"].get(task, ["", 0.0])[1], after["tasks"].get(task, ["", 0.0])[1]))
    out.append(("whole DAG run (wall)", before["wall_seconds"], after["wall_seconds"]))
    return out


def draw(result: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = rows(result)
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(data) + 1.6))
    ys = range(len(data))
    for offset, (index, (_, label)) in zip((-0.2, 0.2), enumerate(HALVES), strict=True):
        values = [r[1 + index] for r in data]
        bars = ax.barh([y + offset for y in ys], values, height=0.4, label=label)
        ax.bar_label(bars, labels=[f"{v:.1f} s" for v in values], fontsize=7, padding=2)
    ax.set_yticks(list(ys), [r[0] for r in data], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    commit = (result.get("git") or {}).get("commit") or "?"
    ax.set_title(f"tidewater_batch run, {result['events_per_increment']:,}-event increment, 2 cores "
                 f"(commit {commit[:7]})", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("result", type=Path, help="a <stamp>-dag_run.json")
    parser.add_argument("--out", type=Path, help="PNG path (default: next to the JSON)")
    args = parser.parse_args(argv)
    print(draw(json.loads(args.result.read_text()), args.out or args.result.with_suffix(".png")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
