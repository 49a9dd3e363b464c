"""``tidewater whatif``'s words and figures: delays and target as typed, the suggestion, the table, the chart
file, the one-line refusals, and a relative ``--chart`` made absolute before the job service gets it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra.job_service.client import absolute_config
from spark_jobs.analysis.whatif_report import duration_text, format_table, parse_delays, parse_target, suggested

pytestmark = pytest.mark.unit


def test_delays_and_target_parse_and_refuse_in_one_line() -> None:
    assert parse_delays("30s,1m,2m,5m,10m") == [30, 60, 120, 300, 600]
    assert parse_delays("2m, 120s,1h") == [120, 3600]
    assert parse_target("0.1%") == pytest.approx(0.001) and parse_target("0.02") == 0.02
    for bad in ("30", "1x", "0s", "-1m", ""):
        with pytest.raises(ValueError, match="not a delay"):
            parse_delays(bad)
    with pytest.raises(ValueError, match="out of range"):
        parse_target("150%")
    with pytest.raises(ValueError, match="not a share"):
        parse_target("lots")


def test_durations_read_as_typed() -> None:
    assert [duration_text(s) for s in (30, 60, 90, 120, 3600, 3690, 45.5, None)] == \
        ["30s", "1m", "1m30s", "2m", "1h", "1h1m30s", "45.5s", "-"]


def row(delay: int, missed: float) -> dict[str, object]:
    return {"delay_seconds": delay, "events": 1000, "dropped_events": int(missed * 1000), "dropped_share": missed,
            "quarantined_events": 0, "missed_share": missed, "windows": 10, "wrong_windows": 1, "wrong_share": 0.1,
            "final_windows": 9, "open_windows": 1, "finality_p50_seconds": delay + 10.0,
            "finality_p95_seconds": delay + 40.0, "finality_max_seconds": delay + 50.0}


def test_the_suggestion_is_the_smallest_delay_within_the_target() -> None:
    rows = [row(30, 0.05), row(60, 0.002), row(120, 0.001), row(300, 0.0)]
    assert suggested(rows, 0.001) == 120 and suggested(rows, 0.0) == 300 and suggested(rows[:2], 0.001) is None


def test_table_and_chart(tmp_path: Path) -> None:
    from spark_jobs.analysis.whatif_chart import write_chart

    report = {"pipeline": "sensor_readings", "window": "tumbling", "watermark_seconds": 120, "batches_model": "recorded",
              "target": 0.001, "events": 1000, "delays": [row(30, 0.05), row(120, 0.001)],
              "suggested_delay_seconds": 120, "notes": ["a note"], "chart": None}
    text = format_table(report)
    assert "30s    50 (5%)" in text and "suggested: 2m" in text and "note: a note" in text
    png = write_chart(report, tmp_path / "sub" / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_relative_chart_path_is_made_absolute_for_the_job_service(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_config(["whatif", "p", "--chart", "c.png", "--config=t.yml"]) == \
        ["whatif", "p", "--chart", str(tmp_path / "c.png"), f"--config={tmp_path / 't.yml'}"]
    assert absolute_config(["sql", "SELECT 1"]) == ["sql", "SELECT 1"]


def test_bad_options_are_one_line_with_exit_2() -> None:
    out = subprocess.run([sys.executable, "-m", "tidewater.cli", "whatif", "sensor_readings", "--delays", "30,1m"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "tidewater: argument --delays: '30' is not a delay; write each as a whole number of s, m or h, such as "
        "30s,1m,2m (see 'tidewater whatif --help')"]
