"""The benchmark results table (benchmarks/results_table.py): the newest result per goal, and the README's copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.results_table import END, GOALS, README, START, latest, load, replace_between_markers, table

pytestmark = pytest.mark.unit

FLINK = next(goal for goal in GOALS if goal.scenario == 6)
FLAT = next(goal for goal in GOALS if goal.scenario == 8)


def bench(size: str, commit: str, *scenarios: dict[str, Any]) -> dict[str, Any]:
    return {"size": {"name": size}, "git": {"commit": commit, "dirty": False}, "started_at": "2026-12-01T10:00:00+00:00",
            "results": list(scenarios)}


def flink(ratio: float, status: str = "ok") -> dict[str, Any]:
    return {"id": 6, "status": status, "ratios": {"tidewater/flink": ratio},
            "metrics": {"flink": {"events_per_s": 400_000}}}


def test_the_newest_full_size_result_that_measured_a_goal_is_shown() -> None:
    results = [("20261201T000000Z-full", bench("full", "a" * 40, flink(0.41))),
               ("20261202T000000Z-full", bench("full", "b" * 40, flink(0.52))),
               ("20261203T000000Z-medium", bench("medium", "c" * 40, flink(0.5))),  # not the goal's size
               ("20261204T000000Z-full", bench("full", "d" * 40, {"id": 6, "status": "skipped", "ratios": {},
                                                                   "metrics": {}}))]
    stem, result, (measured, ratio, met) = latest(FLINK, results) or ("", {}, ("", "", None))
    assert (stem, result["git"]["commit"][0], ratio, met) == ("20261202T000000Z-full", "b", "0.520x Flink", True)
    assert measured == "Flink 400,000 events/s"


def test_a_failed_scenario_is_shown_as_not_met_and_a_missing_goal_as_not_measured() -> None:
    results = [("20261201T000000Z-full", bench("full", "a" * 40, flink(0.3, status="FAILED")))]
    lines = table(results).splitlines()
    flink_row = next(line for line in lines if line.startswith(f"| {FLINK.name} |"))
    assert "| **no** | aaaaaaa | 2026-12-01 | `20261201T000000Z-full` |" in flink_row
    flat_row = next(line for line in lines if line.startswith(f"| {FLAT.name} |"))
    assert "| not measured |" in flat_row
    assert len(lines) == 2 + len(GOALS)


def test_the_table_goes_between_the_markers_and_nothing_else_changes() -> None:
    text = f"# Title\n\nbefore\n{START}\nold table\n{END}\nafter\n"
    assert replace_between_markers(text, "| new |") == f"# Title\n\nbefore\n{START}\n| new |\n{END}\nafter\n"
    with pytest.raises(ValueError):
        replace_between_markers("no markers", "| new |")


def test_the_readme_holds_the_table_of_the_committed_results() -> None:
    """Refresh it with ``python -m benchmarks.results_table --write`` (``python -m benchmarks.bench`` does it itself)."""
    text = README.read_text()
    assert text[text.index(START) + len(START):text.index(END)].strip() == table(load()).strip()


def test_results_are_read_from_files_and_from_result_folders(tmp_path: Path) -> None:
    (tmp_path / "20261201T000000Z-full.json").write_text(json.dumps(bench("full", "a" * 40, flink(0.3))))
    (tmp_path / "20261202T000000Z-chaos").mkdir()
    (tmp_path / "20261202T000000Z-chaos" / "chaos.json").write_text(json.dumps({"seed": 1}))
    (tmp_path / "20261203T000000Z-full.json").write_text("{ not json")
    assert [name for name, _ in load(tmp_path)] == ["20261201T000000Z-full", "20261202T000000Z-chaos"]


def test_scenario_10_shows_the_cluster_row_and_the_measured_reason_of_a_miss() -> None:
    def mode(p99: float, rss: float) -> dict[str, Any]:
        return {"pipelines": {f"p{i}": {} for i in range(10)}, "worst_p99_s": p99, "rss": {"peak_gib": rss},
                "load": {"speed_layer_busy_cores": 1.96, "cores": 2}, "demand": {"median_batch_s": 2.4,
                                                                                "batch_seconds_per_second": 13.0}}

    many = {"id": 10, "status": "ok", "metrics": {"shared": mode(2.5, 2.9), "per_pipeline": mode(9.0, 18.0),
                                                    "cluster": mode(40.0, 5.8)},
            "ratios": {"worst_p99_shared_vs_per_pipeline": 0.278, "peak_rss_shared_vs_per_pipeline": 0.161,
                       "worst_p99_cluster_vs_shared": 16.0, "peak_rss_cluster_vs_shared": 2.0}}
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in table([("20261207T000000Z-full",
                                                                           bench("full", "a" * 40, many))]).splitlines()}
    shared, own, cluster = (rows[g.name] for g in GOALS if g.scenario == 10)
    assert shared[2:5] == ["worst p99 2.50 s of 10 pipelines; peak RSS 2.90 GiB",
                           "p99 0.278x, RSS 0.161x one JVM per pipeline", "**yes**"]  # met: no reason shown
    assert own[2] == ("worst p99 9.00 s of 10 pipelines; peak RSS 18.00 GiB; why: speed layer busy 1.96 of 2 cores, "
                      "micro-batches median 2.40 s, 13.0 batch-s per s") and own[4] == "-"
    assert cluster[2].startswith("worst p99 40.00 s of 10 pipelines; peak RSS 5.80 GiB; why: speed layer busy 1.96")
    assert cluster[3:5] == ["p99 16.000x, RSS 2.000x the shared host", "-"]


def test_a_missed_goal_names_its_reason_from_the_same_result_and_a_met_one_does_not() -> None:
    def with_anchors(ratio: float) -> dict[str, Any]:
        out = flink(ratio)
        out["ratios"].update({"minimal spark job/flink": 0.58, "same-work script/flink": 0.2})
        return out

    missed = latest(FLINK, [("20261201T000000Z-full", bench("full", "a" * 40, with_anchors(0.28)))])
    met = latest(FLINK, [("20261201T000000Z-full", bench("full", "a" * 40, with_anchors(0.52)))])
    assert missed and missed[2] == ("Flink 400,000 events/s; why: in the same run the minimal Spark job (Kafka to one "
                                    "Delta table) reaches 0.580x Flink, the same-work PySpark script 0.200x",
                                    "0.280x Flink", False)
    assert met and met[2] == ("Flink 400,000 events/s", "0.520x Flink", True)
    replay = next(goal for goal in GOALS if goal.scenario == 4)
    parts = {"scenario_1_records": {"records": 5_000_000, "events_per_s": 180_000, "median_batch_s": 2.6,
                                    "densest_event_minute": 60_000, "steps_s": {"parse": 9.0}},
             "later_records": {"records": 4_000_000, "events_per_s": 30_000, "median_batch_s": 16.0,
                               "densest_event_minute": 600_000, "steps_s": {"plan": 90.0, "parse": 20.0, "speed": 30.0}}}
    result = {"id": 4, "status": "ok", "metrics": {"replay": {"events_per_s": 50_000, "records": 9_000_000},
                                                    "replay_segments": parts},
              "ratios": {"replay/catch-up(1a)": 0.45, "replay over scenario 1's records/catch-up(1a)": 1.6}}
    found = latest(replay, [("20261201T000000Z-full", bench("full", "a" * 40, result))])
    assert found and found[2][0] == (
        "50,000 events/s over 9,000,000 records; why: over scenario 1's 5,000,000 records 180,000 events/s (1.60x "
        "catch-up); over the 4,000,000 later ones (densest event-time minute in bronze 600,000 events against 60,000), "
        "30,000 events/s, median micro-batch 16.0 s against 2.6 s; most seconds in plan 90 s, speed 30 s, parse 20 s")
    assert found[2][1] == "0.450x catch-up (1.600x over scenario 1's own records)"
