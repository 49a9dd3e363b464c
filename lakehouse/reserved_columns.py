"""The columns Tidewater adds beside a pipeline's own fields and aggregates: the one list of them.

A schema field or aggregate named like one of them would collide with it: the parser's output and the
bronze table would hold two columns of one name, a windowed table's key or aggregate would shadow a window
bound or a speed layer's bookkeeping. ``lakehouse.pipeline_checks`` refuses such names. The table contracts
(``lakehouse.contracts``) and the parser (``spark_jobs/transforms/parse.py``) add exactly these columns
(tests/unit/test_pipeline_definitions.py compares them), and the window aggregation groups by
``WORKING_COLUMNS`` beside the keys (``spark_jobs/transforms/windows.py``, ``partials.py``).
"""

from __future__ import annotations

# Tidewater's working and partial columns: _json, _typed_<field>, _usable (parser), _sum_<aggregate>,
# _n_<aggregate>, _hll_<aggregate> (speed partials), _rn, _copies (deduplication), ...
RESERVED_PREFIX = "_"
WORKING_COLUMNS = ("window",)
_ADDED_BY = {
    "the parser's output and bronze tables": ("event_time", "kafka_topic", "kafka_partition", "kafka_offset",
                                               "kafka_timestamp", "ingest_time", "event_date"),
    "the parser's output and quarantine tables": ("raw_value", "reason_code", "reason"),
    "every windowed table": ("window_start", "window_end", "max_event_time"),
    "speed tables and their partials": ("updated_at", "batch_id", "is_final", "watermark", "lineage", "compacted",
                                        "slot"),
    "late tables": ("arrival_time", "lateness_ms", "window_key", "speed_version"),
    "batch tables": ("computed_at", "run_id", "bronze_version", "op"),
    "serving views": ("source", "finality", "as_of"),
    "the window aggregation's grouping column": WORKING_COLUMNS,
}
# column -> the tables (or step) that add it
RESERVED_COLUMNS = {column: added_by for added_by, columns in _ADDED_BY.items() for column in columns}
