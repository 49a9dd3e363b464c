"""Expectation suites per table kind, derived from a pipeline definition.

One suite per (kind, pipeline), named ``<kind>.<pipeline>``:

* ``bronze``: event id and keys not null; event time (epoch ms) within 2000-01-01 .. now + 1 day;
  every ``quality.ranges`` column of the pipeline yml within its physical limits.
* ``quarantine``: a one-row frame (bronze_rows, quarantine_rows, quarantine_rate); the rate stays
  below ``quality.max_quarantine_rate`` (default 5 %). Severity *warning*: it never fails a task.
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

from typing import Any

from lakehouse.contracts import MIN_EVENT_MS
from lakehouse.pipeline import Pipeline

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
                                                       "max_value": rate, "severity": "warning"}))
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
    """Regenerate the committed suite JSON files in ``expectations/gx`` (a file context)."""
    from expectations.context import repo_context
    from lakehouse.pipeline import available_pipelines, load_pipeline

    context = repo_context()
    written = []
    for name in available_pipelines():
        p = load_pipeline(name)
        for kind in SUITE_KINDS:
            suite = build_suite(kind, p)
            context.suites.add_or_update(suite)
            written.append(suite.name)
    return written


if __name__ == "__main__":
    for written_name in write_versioned_suites():
        print(f"wrote suite {written_name}")
