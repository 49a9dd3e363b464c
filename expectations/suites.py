"""Expectation suites per table kind, derived from a pipeline definition.

One suite per (kind, pipeline), named ``<kind>.<pipeline>``:

* ``bronze``: event id and keys not null; event time (epoch ms) within 2000-01-01 .. now + 1 day;
  every ``quality.ranges`` column of the pipeline yml within its physical limits.
* ``quarantine``: a one-row frame (bronze_rows, quarantine_rows, quarantine_rate); the rate is at
  most ``quality.max_quarantine_rate`` (default 5 %). Critical like every other expectation: a rate
  above the limit fails the suite (``tidewater check`` exits 1, naming the rate and the limit).
* ``speed`` / ``batch`` / ``staging``: ``window_end > window_start``, count aggregates >= 1,
  ``min <= avg <= max`` (and ``min <= max``) for every column the pipeline aggregates both ways,
  those aggregates within the column's ``quality.ranges``, keys not null, grain unique. Each ordered
  pair is checked on its difference column (``<high>_minus_<low>`` >= 0, or > 0; ``ordered_pairs``,
  added by ``frames.table_frame``): a column check that GX folds into the one aggregate job of the
  other column checks, where a column-pair expectation costs two Spark jobs of its own.
* ``serving``: keys not null, grain (keys + window) unique; plus ``serving_gap``, a one-row frame
  (see :func:`expectations.frames.serving_gap_frame`): no batch window ending at or before the
  last published cutoff and no speed window ending after it is missing from the view.

Running ``python -m expectations.suites`` writes every suite as JSON into the versioned context
``expectations/gx/expectations/`` (what is committed is what runs).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from expectations.context import repo_context
from lakehouse.contracts import MIN_EVENT_MS
from lakehouse.pipeline import Pipeline, available_pipelines, load_pipeline

KINDS = ("bronze", "quarantine", "speed", "batch", "staging", "serving")
SUITE_KINDS = (*KINDS, "serving_gap")
WINDOW_KINDS = ("speed", "batch", "staging")  # tables of window rows: their suites check the ordered pairs
DEFAULT_MAX_QUARANTINE_RATE = 0.05


def suite_name(kind: str, pipeline: str) -> str:
    return f"{kind}.{pipeline}"


def expectation_specs(kind: str, p: Pipeline) -> list[tuple[str, dict[str, Any]]]:
    """(GX expectation class name, kwargs) for one suite: pure data, no GX import."""
    if kind not in SUITE_KINDS:
        raise ValueError(f"unknown table kind {kind!r}; expected one of {KINDS}")
    specs: list[tuple[str, dict[str, Any]]] = []
    not_null = [("ExpectColumnValuesToNotBeNull", {"column": c}) for c in (p.event_id, *p.keys)]
    if kind == "bronze":
        specs += not_null
        specs.append(("ExpectColumnValuesToBeBetween", {
            "column": p.event_time, "min_value": MIN_EVENT_MS, "max_value": {"$PARAMETER": "max_event_ms"}}))
        for column, (low, high) in sorted((p.quality.get("ranges") or {}).items()):
            specs.append(("ExpectColumnValuesToBeBetween", {"column": column, "min_value": float(low),
                                                           "max_value": float(high)}))
    elif kind == "quarantine":
        rate = float(p.quality.get("max_quarantine_rate", DEFAULT_MAX_QUARANTINE_RATE))
        specs.append(("ExpectColumnValuesToBeBetween", {"column": "quarantine_rate", "min_value": 0.0,
                                                       "max_value": rate}))
    elif kind in WINDOW_KINDS:
        specs += [("ExpectColumnValuesToNotBeNull", {"column": c}) for c in p.keys]
        specs += _window_specs(p)
        specs.append(("ExpectCompoundColumnsToBeUnique", {"column_list": list(p.grain)}))
    elif kind == "serving_gap":
        specs.append(("ExpectColumnValuesToBeBetween", {"column": "missing_windows", "min_value": 0, "max_value": 0}))
    else:  # serving
        specs += [("ExpectColumnValuesToNotBeNull", {"column": c}) for c in p.keys]
        specs.append(("ExpectCompoundColumnsToBeUnique", {"column_list": list(p.grain)}))
    return specs


def ordered_pairs(p: Pipeline) -> list[tuple[str, str, bool]]:
    """(higher, lower, or_equal) column pairs every window row orders: ``window_end > window_start``, and
    ``max >= avg >= min`` (or ``max >= min``) for each column the pipeline aggregates both ways."""
    pairs = [("window_end", "window_start", False)]
    for names in _min_avg_max(p).values():
        chain = [names[f] for f in ("min", "avg", "max") if f in names]
        pairs += [(high, low, True) for low, high in zip(chain, chain[1:], strict=False)]
    return pairs


def pair_gap(high: str, low: str) -> str:
    """The difference column of an ordered pair (timestamps in microseconds): see ``frames.table_frame``."""
    return f"{high}_minus_{low}"


def _min_avg_max(p: Pipeline) -> dict[str, dict[str, str]]:
    """Aggregated column -> {"min" | "avg" | "max": aggregate name}."""
    by_column: dict[str, dict[str, str]] = {}
    for agg in p.aggregates:
        if agg.fn in ("min", "avg", "max") and agg.column:
            by_column.setdefault(agg.column, {})[agg.fn] = agg.name
    return by_column


def _window_specs(p: Pipeline) -> list[tuple[str, dict[str, Any]]]:
    specs: list[tuple[str, dict[str, Any]]] = [
        ("ExpectColumnValuesToBeBetween", {"column": pair_gap(high, low), "min_value": 0, "strict_min": not or_equal})
        for high, low, or_equal in ordered_pairs(p)]
    specs += [("ExpectColumnValuesToBeBetween", {"column": agg.name, "min_value": 1})
              for agg in p.aggregates if agg.fn == "count"]
    ranges = p.quality.get("ranges") or {}
    for column, names in sorted(_min_avg_max(p).items()):
        if column in ranges:  # a window's min/avg/max of a physical quantity obeys the same limits
            low, high = ranges[column]
            specs += [("ExpectColumnValuesToBeBetween", {"column": n, "min_value": float(low), "max_value": float(high)})
                      for n in names.values()]
    return specs


def suite_file(kind: str, pipeline: str) -> Path:
    """The committed JSON of suite ``<kind>.<pipeline>`` (what every validation runs)."""
    return Path(__file__).resolve().parent / "gx" / "expectations" / kind / f"{pipeline}.json"


def canonical(type_name: str, kwargs: dict[str, Any], severity: str = "critical") -> str:
    """One expectation as comparable text, as GX stores it: numbers as floats (``0`` as ``0.0``), and no
    ``strict_min``/``strict_max`` that is False (the default) (pure)."""
    def norm(v: Any) -> Any:
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v
    kept = {k: norm(v) for k, v in kwargs.items() if not (k in ("strict_min", "strict_max") and v is False)}
    return json.dumps([type_name, kept, severity], sort_keys=True)


def expected_expectations(kind: str, p: Pipeline) -> list[str]:
    """The suite the definition asks for, canonical and sorted (pure: no GX)."""
    out = []
    for cls_name, kwargs in expectation_specs(kind, p):
        rest = {k: v for k, v in kwargs.items() if k != "severity"}
        out.append(canonical(re.sub(r"(?<!^)(?=[A-Z])", "_", cls_name).lower(), rest, kwargs.get("severity", "critical")))
    return sorted(out)


def suite_problem(kind: str, p: Pipeline) -> str | None:
    """Why the committed suite ``<kind>.<p>`` must not gate anything, or None: it is missing (a new
    pipeline), or it is not what the pipeline's definition now asks for (ranges, keys or aggregates
    changed without regenerating). Fail closed: an audit against a stale suite would check old rules."""
    path, regenerate = suite_file(kind, p.name), "generate the suites with '.venv/bin/python -m expectations.suites'"
    try:
        committed = json.loads(path.read_text())["expectations"]
    except FileNotFoundError:
        return (f"quality: no expectation suite {suite_name(kind, p.name)} ({path.relative_to(path.parents[4])}); "
                f"a new pipeline needs its suites: {regenerate}, then commit them")
    found = sorted(canonical(e["type"], e["kwargs"], e.get("severity", "critical")) for e in committed)
    expected = expected_expectations(kind, p)
    if found == expected:
        return None
    first = next((e for e in expected if e not in found), None) or next(e for e in found if e not in expected)
    return (f"quality: suite {suite_name(kind, p.name)} ({path.relative_to(path.parents[4])}) no longer matches "
            f"lakehouse/pipelines/{p.name}.yml (e.g. {'missing' if first in expected else 'extra'}: {first}); "
            f"{regenerate}, then commit them")


def build_suite(kind: str, p: Pipeline) -> Any:
    """A ``great_expectations.ExpectationSuite`` built from :func:`expectation_specs`."""
    import great_expectations as gx
    import great_expectations.expectations as gxe

    suite = gx.ExpectationSuite(name=suite_name(kind, p.name),
                                meta={"tidewater_kind": kind, "pipeline": p.name, "owner": p.owner})
    for cls_name, kwargs in expectation_specs(kind, p):
        suite.add_expectation(getattr(gxe, cls_name)(**kwargs))
    return suite


def write_versioned_suites() -> list[str]:
    """Regenerate the committed suite JSON files in ``expectations/gx`` (a file context): the missing and
    stale ones only, so that a new pipeline adds its files and leaves the others' alone (each write
    gives every expectation a new id)."""
    context = repo_context()
    written = []
    for name in available_pipelines():
        p = load_pipeline(name)
        for kind in SUITE_KINDS:
            if suite_problem(kind, p) is None:
                continue
            suite = build_suite(kind, p)
            context.suites.add_or_update(suite)
            written.append(suite.name)
    return written


if __name__ == "__main__":
    written_names = write_versioned_suites()
    for written_name in written_names:
        print(f"wrote suite {written_name}")
    if not written_names:
        print("no suite written: every suite matches its pipeline's definition")
