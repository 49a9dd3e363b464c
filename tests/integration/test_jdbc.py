"""BI access: the Spark Thrift Server shares the catalog; a real HiveServer2 client (pyhive) reads
``serving.sensor_readings`` with a filter. Also: ``tidewater sql`` prints a table."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime

import pytest

from lakehouse import contracts, naming
from lakehouse.pipeline import load_pipeline

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def thrift(spark, cfg):  # type: ignore[no-untyped-def]
    from infra.services import thrift_server

    thrift_server.start(cfg)
    yield cfg
    thrift_server.stop(cfg)


def test_pyhive_reads_serving_view_with_filter(spark, cfg, thrift) -> None:  # type: ignore[no-untyped-def]
    from pyhive import hive

    from lakehouse.serving import refresh_view

    p = load_pipeline("sensor_readings")
    contracts.ensure(spark, contracts.speed(p, 1))
    schema = ", ".join(f"`{c}` {t}" for c, t in contracts.speed(p, 1).columns)
    w = [datetime(2026, 3, 1, 12, m) for m in range(4)]
    rows = [("s1", w[0], w[1], 3, 20.0, 19.0, 21.0, w[0], w[0], 1, True),
            ("s2", w[0], w[1], 1, 5.5, 5.5, 5.5, w[0], w[0], 1, True),
            ("s1", w[2], w[3], 2, 30.0, 29.0, 31.0, w[2], w[2], 2, False)]
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(naming.speed_table(p.name))
    refresh_view(spark, cfg, p)
    conn = hive.connect(host=cfg.thrift.host, port=cfg.thrift.port, auth="NOSASL")
    try:
        cur = conn.cursor()
        cur.execute("SELECT sensor_id, window_start, event_count, source, finality FROM serving.sensor_readings "
                    "WHERE sensor_id = 's1' ORDER BY window_start")
        got = cur.fetchall()
    finally:
        conn.close()
    assert [(r[0], r[2], r[3], r[4]) for r in got] == [("s1", 3, "speed", "provisional"), ("s1", 2, "speed", "provisional")]
    assert str(got[0][1]).startswith("2026-03-01 12:00:00")


def test_tidewater_sql_prints_a_table(spark, cfg) -> None:  # type: ignore[no-untyped-def]
    spark.sql("SELECT 1").collect()
    out = subprocess.run([sys.executable, "-m", "lakehouse.cli", "sql",
                          "SELECT sensor_id, count(*) AS n FROM serving.sensor_readings GROUP BY sensor_id ORDER BY 1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0].split() == ["sensor_id", "|", "n"]
    assert lines[2].split() == ["s1", "|", "2"] and lines[3].split() == ["s2", "|", "1"]
    assert lines[-1] == "(2 rows)"
    bad = subprocess.run([sys.executable, "-m", "lakehouse.cli", "sql", "SELEC nonsense"],
                         capture_output=True, text=True, timeout=300)
    last = bad.stderr.strip().splitlines()[-1]
    assert bad.returncode == 2 and last.startswith("tidewater: sql: [PARSE_SYNTAX_ERROR]")
