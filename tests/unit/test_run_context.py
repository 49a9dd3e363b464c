"""Pure parts of a benchmark result's yardstick (benchmarks/run_context.py)."""

from __future__ import annotations

from benchmarks.report import markdown
from benchmarks.run_context import cpu_probe, effective_settings, overrides
from lakehouse.config import TidewaterConfig


def test_overrides_keep_tidewater_settings_and_leave_out_secret_names() -> None:
    env = {"TIDEWATER_JVM_OPTIONS": "-XX:+UseParallelGC", "TIDEWATER_POSTGRES_PASSWORD": "s3",
           "TIDEWATER_AIRFLOW_SECRET_KEY": "k", "TIDEWATER_API_TOKEN": "t", "HOME": "/root"}
    assert overrides(env) == {"TIDEWATER_JVM_OPTIONS": "-XX:+UseParallelGC"}


def test_effective_settings_carry_the_spark_section_and_jvm_flags() -> None:
    cfg = TidewaterConfig(jvm_options="-XX:TieredStopAtLevel=1")
    got = effective_settings(cfg, {"TIDEWATER_SPEED_NICE": "0"})
    assert got["spark"]["trigger_seconds"] == cfg.spark.trigger_seconds
    assert got["spark"]["speed_nice"] == cfg.spark.speed_nice
    assert "-XX:ReservedCodeCacheSize=240m" in got["jvm_flags"]  # what the JVM really got
    assert got["env_overrides"] == {"TIDEWATER_SPEED_NICE": "0"}


def test_cpu_probe_measures_positive_rates() -> None:
    probe = cpu_probe(loops=10_000, megabytes=2)
    assert probe["python_mops"] > 0 and probe["sha256_mb_s"] > 0


def test_report_shows_the_probe_and_the_settings() -> None:
    run = {"started_at": "t", "size": {"name": "quick"}, "git": {"commit": "abc", "dirty": False},
           "machine": {"cores": 2, "memory_gib": 24, "load_avg_at_start": (0, 0, 0), "python": "3.11", "java": "17",
                       "versions": {}, "platform": "Linux-x", "cpu_probe": {"python_mops": 14.5}},
           "cpu_probe_at_end": {"python_mops": 13.9}, "settings": {"jvm_options": "-XX:+UseSerialGC"}, "results": []}
    text = markdown(run, [])
    assert "at the start (higher is faster): {\"python_mops\": 14.5}" in text
    assert "at the end (higher is faster): {\"python_mops\": 13.9}" in text
    assert "-XX:+UseSerialGC" in text and "platform Linux-x" in text
