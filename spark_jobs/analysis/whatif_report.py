"""The words and figures of ``tidewater whatif``: candidate delays and the target as typed, the suggestion,
and the printed table (``spark_jobs.analysis.whatif`` computes the report)."""

from __future__ import annotations

import re
from typing import Any

_DURATION = re.compile(r"^(\d+)(s|m|h)$")
_UNIT = {"s": 1, "m": 60, "h": 3600}


def parse_delays(text: str) -> list[int]:
    """'30s,1m,2m' -> [30, 60, 120] (sorted, without repeats). Raises ValueError naming the bad part."""
    out = set()
    for part in (x.strip() for x in text.split(",")):
        match = _DURATION.match(part)
        if not match or int(match.group(1)) <= 0:
            raise ValueError(f"{part!r} is not a delay; write each as a whole number of s, m or h, such as 30s,1m,2m")
        out.add(int(match.group(1)) * _UNIT[match.group(2)])
    return sorted(out)


def parse_target(text: str) -> float:
    """'0.1%' -> 0.001; a plain fraction ('0.001') as it is. Raises ValueError outside 0-100%."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a share; write a percentage such as 0.1% or a fraction such as 0.001") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{text!r} is out of range; expected 0% to 100%")
    return value


def duration_text(seconds: float | None) -> str:
    """120 -> '2m', 90 -> '1m30s', 3600 -> '1h', 45.5 -> '45.5s'; None -> '-'."""
    if seconds is None:
        return "-"
    if seconds != int(seconds) or seconds < 60:
        return f"{seconds:g}s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v)


def suggested(rows: list[dict[str, Any]], target: float) -> int | None:
    """The smallest delay whose missed share (dropped + quarantined) is at most ``target``, or None."""
    return next((r["delay_seconds"] for r in rows if r["missed_share"] <= target), None)


def _pct(share: float) -> str:
    return f"{share * 100:.3g}%"


def format_table(report: dict[str, Any]) -> str:
    head = (f"whatif {report['pipeline']}: {report['events']:,} events in bronze ({report['window']} windows, "
            f"watermark now {duration_text(report['watermark_seconds'])}; micro-batches {report['batches_model']})")
    columns = ("delay", "dropped", "quarantined", "wrong windows", "final p50", "final p95", "not final")
    cells = [(duration_text(r["delay_seconds"]), f"{r['dropped_events']:,} ({_pct(r['dropped_share'])})",
              f"{r['quarantined_events']:,}", f"{r['wrong_windows']:,}/{r['windows']:,} ({_pct(r['wrong_share'])})",
              duration_text(r["finality_p50_seconds"]), duration_text(r["finality_p95_seconds"]),
              f"{r['open_windows']:,}") for r in report["delays"]]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = [head, "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    best = report["suggested_delay_seconds"]
    target = _pct(report["target"])
    lines.append(f"suggested: {duration_text(best)} (the smallest delay that misses at most {target} of events)"
                 if best is not None else f"suggested: none; every delay tried misses more than {target} of events: "
                 "try longer delays in --delays")
    lines += [f"note: {n}" for n in report["notes"]]
    if report.get("chart"):
        lines.append(f"chart: {report['chart']}")
    return "\n".join(lines)
