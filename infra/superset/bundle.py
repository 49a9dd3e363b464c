"""The ``sensor_readings`` dashboard as a Superset import bundle (export format v1: YAML files in a zip).

One database (the Thrift server through pyhive's ``hive://``), five SQL-defined (virtual) datasets,
six charts (two per row) and one dashboard. Every object has a fixed UUID (uuid5 of its name), so importing
again with ``overwrite`` updates the same rows: provisioning is idempotent.

Why virtual datasets: pyhive's ``hive://`` dialect lists database names where SQLAlchemy expects
table names (``get_table_names`` runs ``SHOW TABLES`` and reads the first column, which is the
database on Spark), so a physical dataset's metadata sync fails or finds nothing. A virtual dataset
declares its columns here; Superset then only runs ``SELECT ... FROM (<sql>) AS virtual_table``.
Pure Python + PyYAML: runs in ``.venv-bi`` (provision.py) and in the unit tests.
"""

from __future__ import annotations

import io
import uuid
import zipfile
from typing import Any

import yaml

NS = uuid.UUID("6f0f3c3e-7f5e-4c2b-9a43-5d1e0c7b7a10")
DB_NAME = "Tidewater (Spark Thrift)"
TITLE = "Tidewater: sensor_readings"
SLUG = "sensor-readings"
NO_FILTER = "No filter"

DATASETS: dict[str, tuple[str, str, dict[str, str]]] = {  # name: (time column, SQL, columns)
    "tw_serving_sensor_readings": ("window_start", (
        "SELECT sensor_id, window_start, window_end, event_count, avg_temperature, min_temperature, "
        "max_temperature, source, finality, as_of FROM serving.sensor_readings"),
        {"sensor_id": "STRING", "window_start": "TIMESTAMP", "window_end": "TIMESTAMP", "event_count": "BIGINT",
         "avg_temperature": "DOUBLE", "min_temperature": "DOUBLE", "max_temperature": "DOUBLE",
         "source": "STRING", "finality": "STRING", "as_of": "STRING"}),
    "tw_quarantine_sensor_readings": ("ingest_time", (
        "SELECT reason_code, reason, ingest_time, kafka_partition, kafka_offset FROM quarantine.sensor_readings"),
        {"reason_code": "STRING", "reason": "STRING", "ingest_time": "TIMESTAMP", "kafka_partition": "INT",
         "kafka_offset": "BIGINT"}),
    "tw_speed_progress_sensor_readings": ("batch_time", (
        "SELECT batch_time, batch_id, query_version, input_rows, "
        "(unix_millis(recorded_at) - unix_millis(batch_time)) / 1000.0 AS commit_lag_s, "
        "(unix_millis(batch_time) - unix_millis(watermark)) / 1000.0 AS watermark_lag_s, "
        "batch_duration_ms / 1000.0 AS batch_duration_s FROM ops.stream_progress "
        "WHERE pipeline = 'sensor_readings' AND query = 'speed'"),
        {"batch_time": "TIMESTAMP", "batch_id": "BIGINT", "query_version": "INT", "input_rows": "BIGINT",
         "commit_lag_s": "DOUBLE", "watermark_lag_s": "DOUBLE", "batch_duration_s": "DOUBLE"}),
    "tw_late_sensor_readings": ("window_start", (
        "SELECT event_id, sensor_id, window_start, window_end, arrival_time, lateness_ms / 1000.0 AS lateness_s, "
        "batch_id, speed_version FROM late.sensor_readings"),
        {"event_id": "STRING", "sensor_id": "STRING", "window_start": "TIMESTAMP", "window_end": "TIMESTAMP",
         "arrival_time": "TIMESTAMP", "lateness_s": "DOUBLE", "batch_id": "BIGINT", "speed_version": "INT"}),
    "tw_alerts_sensor_readings": ("last_event_time", (
        "SELECT alert_id, pattern, kind, key AS sensor_id, last_event_time, watermark, emitted_at "
        "FROM alerts.sensor_readings"),
        {"alert_id": "STRING", "pattern": "STRING", "kind": "STRING", "sensor_id": "STRING",
         "last_event_time": "TIMESTAMP", "watermark": "TIMESTAMP", "emitted_at": "TIMESTAMP"}),
}


def uid(name: str) -> str:
    return str(uuid.uuid5(NS, name))


def _metric(label: str, sql: str) -> dict[str, Any]:
    return {"expressionType": "SQL", "sqlExpression": sql, "label": label, "hasCustomLabel": True}


def _time_filter(column: str) -> dict[str, Any]:
    return {"clause": "WHERE", "subject": column, "operator": "TEMPORAL_RANGE", "comparator": NO_FILTER,
            "expressionType": "SIMPLE"}


def _series(x: str, metrics: list[dict[str, Any]], groupby: list[str], viz: str, **extra: Any) -> dict[str, Any]:
    return {"viz_type": viz, "x_axis": x, "time_grain_sqla": "PT1M", "metrics": metrics, "groupby": groupby,
            "adhoc_filters": [_time_filter(x)], "time_range": NO_FILTER, "row_limit": 10000,
            "show_legend": True, "legendType": "scroll", "legendOrientation": "top", "rich_tooltip": True,
            "x_axis_time_format": "smart_date", "y_axis_format": "SMART_NUMBER", "truncate_metric": True,
            "order_desc": True, **extra}


FINALITIES = ("provisional", "corrected", "final")
CHARTS: dict[str, tuple[str, dict[str, Any]]] = {  # title: (dataset, form data)
    "Average temperature per sensor: provisional / corrected / final": ("tw_serving_sensor_readings", _series(
        "window_start", [_metric(f, f"MAX(CASE WHEN finality = '{f}' THEN avg_temperature END)") for f in FINALITIES],
        ["sensor_id"], "echarts_timeseries_line", series_limit=5, markerEnabled=True, markerSize=4,
        series_limit_metric=_metric("windows", "COUNT(*)"), y_axis_format=".2f")),
    "Corrected windows (batch value differs from the speed layer's)": ("tw_serving_sensor_readings", {
        "viz_type": "table", "query_mode": "raw", "time_range": NO_FILTER,
        "all_columns": ["window_start", "sensor_id", "avg_temperature", "event_count", "as_of"],
        "order_by_cols": ['["window_start", false]'], "row_limit": 1000, "page_length": 20,
        "adhoc_filters": [_time_filter("window_start"), {
            "clause": "WHERE", "subject": "finality", "operator": "==", "comparator": "corrected",
            "expressionType": "SIMPLE"}], "table_timestamp_format": "smart_date", "include_search": True}),
    "Quarantined records per minute, by reason": ("tw_quarantine_sensor_readings", _series(
        "ingest_time", [_metric("records", "COUNT(*)")], ["reason_code"], "echarts_timeseries_bar",
        stack="Stack")),
    "Speed-layer lag per micro-batch (seconds)": ("tw_speed_progress_sensor_readings", _series(
        "batch_time", [_metric("trigger to commit", "MAX(commit_lag_s)"),
                       _metric("watermark behind trigger", "MAX(watermark_lag_s)"),
                       _metric("batch duration", "MAX(batch_duration_s)")], [], "echarts_timeseries_line",
        time_grain_sqla="PT1S", markerEnabled=True, markerSize=4, y_axis_format=".1f")),
    "Late arrivals: events the speed layer dropped, by the window they missed": ("tw_late_sensor_readings", _series(
        "window_start", [_metric("late events", "COUNT(*)")], ["sensor_id"], "echarts_timeseries_bar",
        stack="Stack")),
    "Alerts over time, by pattern": ("tw_alerts_sensor_readings", _series(
        "last_event_time", [_metric("alerts", "COUNT(*)")], ["pattern"], "echarts_timeseries_bar",
        stack="Stack")),
}


def _database(uri: str) -> dict[str, Any]:
    return {"database_name": DB_NAME, "sqlalchemy_uri": uri, "cache_timeout": None, "expose_in_sqllab": True,
            "allow_run_async": False, "allow_ctas": False, "allow_cvas": False, "allow_dml": False,
            "allow_file_upload": False, "extra": {"allows_virtual_table_explore": True},
            "uuid": uid("database"), "version": "1.0.0"}


def _dataset(name: str) -> dict[str, Any]:
    dttm, sql, columns = DATASETS[name]
    cols = [{"column_name": c, "type": t, "is_dttm": t == "TIMESTAMP", "is_active": True, "groupby": True,
             "filterable": True, "expression": None, "description": None, "python_date_format": None,
             "verbose_name": None, "extra": None} for c, t in columns.items()]
    return {"table_name": name, "main_dttm_col": dttm, "description": None, "default_endpoint": None,
            "offset": 0, "cache_timeout": None, "catalog": None, "schema": "default", "sql": sql, "params": None,
            "template_params": None, "filter_select_enabled": True, "fetch_values_predicate": None, "extra": None,
            "normalize_columns": False, "always_filter_main_dttm": False, "uuid": uid(name),
            "metrics": [{"metric_name": "count", "verbose_name": "COUNT(*)", "metric_type": "count",
                         "expression": "COUNT(*)", "description": None, "d3format": None, "extra": None,
                         "warning_text": None}],
            "columns": cols, "version": "1.0.0", "database_uuid": uid("database")}


def _chart(title: str) -> dict[str, Any]:
    dataset, params = CHARTS[title]
    return {"slice_name": title, "description": None, "certified_by": None, "certification_details": None,
            "viz_type": params["viz_type"], "params": params, "query_context": None, "cache_timeout": None,
            "uuid": uid(title), "version": "1.0.0", "dataset_uuid": uid(dataset)}


def _dashboard() -> dict[str, Any]:
    titles = list(CHARTS)
    rows = [titles[i:i + 2] for i in range(0, len(titles), 2)]  # two charts of width 6 per row
    position: dict[str, Any] = {"DASHBOARD_VERSION_KEY": "v2", "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID",
                                "children": ["GRID_ID"]}, "HEADER_ID": {"id": "HEADER_ID", "type": "HEADER",
                                                                        "meta": {"text": TITLE}},
                                "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": [], "parents": ["ROOT_ID"]}}
    for r, titles in enumerate(rows):
        row_id = f"ROW-{r}"
        position["GRID_ID"]["children"].append(row_id)
        position[row_id] = {"type": "ROW", "id": row_id, "children": [], "parents": ["ROOT_ID", "GRID_ID"],
                            "meta": {"background": "BACKGROUND_TRANSPARENT"}}
        for c, title in enumerate(titles):
            chart_id = f"CHART-{r}{c}"
            position[row_id]["children"].append(chart_id)
            position[chart_id] = {"type": "CHART", "id": chart_id, "children": [],
                                  "parents": ["ROOT_ID", "GRID_ID", row_id],
                                  "meta": {"chartId": 0, "width": 6, "height": 60, "sliceName": title,
                                           "uuid": uid(title)}}
    return {"dashboard_title": TITLE, "description": None, "css": "", "slug": SLUG, "certified_by": None,
            "certification_details": None, "published": True, "uuid": uid("dashboard"), "position": position,
            "metadata": {"color_scheme": "supersetColors", "refresh_frequency": 0, "expanded_slices": {},
                         "label_colors": {}, "timed_refresh_immune_slices": [], "cross_filters_enabled": False,
                         "default_filters": "{}", "chart_configuration": {}, "native_filter_configuration": []},
            "version": "1.0.0"}


def files(uri: str) -> dict[str, dict[str, Any]]:
    """Bundle path -> YAML document."""
    out: dict[str, dict[str, Any]] = {
        "bundle/metadata.yaml": {"version": "1.0.0", "type": "Dashboard", "timestamp": "2026-11-23T00:00:00+00:00"},
        "bundle/databases/tidewater.yaml": _database(uri),
        "bundle/dashboards/sensor_readings.yaml": _dashboard()}
    out.update({f"bundle/datasets/tidewater/{name}.yaml": _dataset(name) for name in DATASETS})
    out.update({f"bundle/charts/chart_{i}.yaml": _chart(title) for i, title in enumerate(CHARTS)})
    return out


def zip_bytes(uri: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, doc in files(uri).items():
            zf.writestr(path, yaml.safe_dump(doc, sort_keys=False))
    return buf.getvalue()
