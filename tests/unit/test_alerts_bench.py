"""Scenario 9's pure parts: the bench pipeline, the Flink ``MATCH_RECOGNIZE`` text built from it, the paced
events as sent, the latency figures, and the results table's reading of the scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import paced_producer
from benchmarks.alerts_bench import NAME, PATTERN, SENSORS, TOPIC, bench_pipeline, flink_condition, sequence
from benchmarks.alerts_latency import latencies, passage_ms, summary
from benchmarks.alerts_oracle import expected_alerts
from benchmarks.flink_match_job import condition, interval, match_sql, read_matches, source_sql
from benchmarks.results_table import GOALS, latest
from benchmarks.s9_alerts_flink import GOAL_P99_S, GOAL_RATIO
from lakehouse.pipeline import load_pipeline

pytestmark = pytest.mark.unit


def test_the_bench_pipeline_is_sensor_readings_with_its_sequence_pattern_only() -> None:
    shipped, bench = load_pipeline("sensor_readings"), bench_pipeline("20 seconds")
    assert (bench.name, bench.topic, bench.watermark) == (NAME, TOPIC, "20 seconds")
    assert [a.name for a in bench.alerts] == [PATTERN] and len(shipped.alerts) == 3
    assert sequence(bench) == next(a for a in shipped.alerts if a.name == PATTERN)
    assert (bench.schema, bench.event_time, bench.event_id) == (shipped.schema, shipped.event_time, shipped.event_id)


def test_the_flink_query_states_the_pipelines_pattern() -> None:
    pattern = sequence(bench_pipeline("2 minutes"))
    assert pattern.first and pattern.then
    sql = match_sql(pattern.key, flink_condition(pattern.first), flink_condition(pattern.then), pattern.within_ms)
    assert "PARTITION BY sensor_id ORDER BY event_time" in sql
    assert "PATTERN (FIRST_EVENT OTHER* THEN_EVENT) WITHIN INTERVAL '10' MINUTE" in sql
    assert "AFTER MATCH SKIP PAST LAST ROW" in sql
    assert ("DEFINE FIRST_EVENT AS FIRST_EVENT.`temperature` > 35, OTHER AS NOT (OTHER.`temperature` < 20), "
            "THEN_EVENT AS THEN_EVENT.`temperature` < 20") in sql
    source = source_sql("t", "h:1", "sensor_id", {"temperature": "DOUBLE"}, 120_000, "partition:0,offset:5", None)
    assert "WATERMARK FOR event_time AS event_time - INTERVAL '2' MINUTE" in source
    assert "'scan.startup.mode' = 'earliest-offset'" in source and "`temperature` DOUBLE" in source
    later = source_sql("t", "h:1", "sensor_id", {}, 20_000, "partition:0,offset:5", "partition:0,offset:2")
    assert "'scan.startup.specific-offsets' = 'partition:0,offset:2'" in later


def test_intervals_and_conditions_in_flink_sql() -> None:
    assert interval(600_000) == "INTERVAL '10' MINUTE" and interval(20_000) == "INTERVAL '20' SECOND"
    assert interval(600_001) == "INTERVAL '0 00:10:00.001' DAY TO SECOND(3)"
    assert interval(90 * 60_000 * 2) == "INTERVAL '0 03:00:00.000' DAY TO SECOND(3)"
    with pytest.raises(ValueError):
        interval(0)
    assert condition("temperature,>=,45.5", "A") == "A.`temperature` >= 45.5"
    assert condition("sensor_id,==,s-1", "A") == "A.`sensor_id` = 's-1'"
    assert condition("note,!=,it's", "A") == "A.`note` <> 'it''s'"
    with pytest.raises(ValueError):
        condition("temperature,=>,1", "A")


def test_the_sink_reader_reads_committed_files_only(tmp_path: Path) -> None:
    row = {"match_key": "s-1", "first_id": "e1", "then_id": "e3", "first_ms": 1, "then_ms": 3}
    (tmp_path / "part-0").write_text(json.dumps(row) + "\n")
    (tmp_path / ".part-1.inprogress.x").write_text(json.dumps(row) + "\n")
    assert read_matches(tmp_path) == ([("s-1", "e1", "e3", 1, 3)], 1, 1)


def test_sent_events_are_the_producers_events_and_fire_hot_then_cold_alerts() -> None:
    chunks = [(10, 1_000.0), (20, 1_000.01), (25, 1_000.02)]
    events = paced_producer.sent_events(chunks, "L")
    assert [e["event_id"] for e in events] == [f"Le{n}" for n in range(25)]
    assert {e["timestamp"] for e in events[10:20]} == {1_000_010}
    assert events[3] == paced_producer.event(3, "L", 1_000_000)
    # a paced run of 3 s at 1,000/s: each sensor's ten temperatures hold one hot and six cold ones
    chunks = [(n, 2_000 + n / 1000) for n in range(10, 3_001, 10)]
    alerts = expected_alerts(bench_pipeline("20 seconds"), paced_producer.sent_events(chunks, "L"), 10**15)
    assert 250 <= len(alerts) <= 300


def test_the_backlog_generator_fires_alerts_with_its_sensor_count() -> None:
    """fill.events' temperature formula in plain Python: 300 sensors cycle, 1,000 would never alert."""
    def events(n: int, sensors: int) -> list[dict[str, object]]:
        return [{"event_id": f"e-{i}", "sensor_id": f"s-{i % sensors}", "timestamp": i,
                 "temperature": ((i * 7919) % 1000) / 20.0 - 10.0} for i in range(n)]

    p = bench_pipeline("2 minutes")
    assert len(expected_alerts(p, events(30_000, SENSORS), 10**15)) > 2_500
    assert expected_alerts(p, events(30_000, 1_000), 10**15) == set()


def test_latency_figures_from_send_times_and_the_watermark() -> None:
    sent_ms = [1_000, 2_000, 3_000, 125_000, 126_000]
    assert passage_ms(sent_ms, 2_000, 120_000) == 125_000  # the first event past 2 s + 2 min
    assert passage_ms(sent_ms, 6_000, 120_000) is None  # nothing later than 126 s was sent
    figures = latencies({("k", "a", "b"): 127.5}, {("k", "a", "b"): 2_000}, sent_ms, 120_000)
    assert figures["send_to_alert"]["p99_s"] == 125.5 and figures["watermark_to_alert"]["p99_s"] == 2.5
    assert summary([]) == {"n": 0, "p50_s": None, "p99_s": None, "max_s": None}
    assert summary([float(n) for n in range(1, 101)])["p99_s"] == 100.0


def scenario9(ratio: float, p99: float) -> dict[str, object]:
    lat = {"send_to_alert": {"p50_s": p99 - 1, "p99_s": p99}, "watermark_to_alert": {"p50_s": 1.0, "p99_s": 1.5}}
    return {"id": 9, "status": "ok", "ratios": {"tidewater/flink": ratio}, "settings": {"watermark": "2 minutes"},
            "metrics": {"tidewater": {"events_per_s": 20_000}, "flink": {"events_per_s": 100_000},
                        "latency": {"tidewater": lat, "flink": lat}}}


def test_the_results_table_reads_both_goals_of_scenario_9() -> None:
    throughput, latency = (goal for goal in GOALS if goal.scenario == 9)
    run = {"size": {"name": "full"}, "git": {"commit": "a" * 40, "dirty": False}, "results": [scenario9(0.2, 121.3)]}
    _, _, (measured, ratio, met) = latest(throughput, [("20261206T000000Z-full", run)]) or ("", {}, ("", "", None))
    assert (measured, ratio, met) == ("Tidewater 20,000 events/s, Flink 100,000 events/s", "0.200x Flink", False)
    _, _, (measured, _, met) = latest(latency, [("20261206T000000Z-full", run)]) or ("", {}, ("", "", None))
    assert measured.startswith("p99 121.3 s with a 2 minutes watermark; watermark → alert p99 1.50 s") and met is False
    assert GOAL_RATIO == 0.5 and GOAL_P99_S == 2.0


def test_the_notes_say_which_goal_is_missed_and_why() -> None:
    from benchmarks.result import ScenarioResult
    from benchmarks.s9_alerts_flink import goal_notes

    scenario = scenario9(0.6, 121.3)
    res = ScenarioResult(9, "alerts", ratios=scenario["ratios"], metrics=scenario["metrics"])  # type: ignore[arg-type]
    notes = goal_notes(res, "2 minutes")
    assert notes[0] == "throughput goal (>= 0.5x Flink MATCH_RECOGNIZE): met (0.6x)"
    assert notes[1].startswith("latency goal (send -> alert p99 <= 2.0 s): MISSED")
    assert "2 minutes watermark" in notes[2] and "p99 1.5 s" in notes[3]
    assert all(len(n) <= 400 for n in notes)  # the Markdown report shows a note's first 400 characters
