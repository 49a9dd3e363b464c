"""Scenario 6: Flink SQL (PyFlink, separate venv) over the same pre-filled topic as scenario 1.

Catch-up throughput = events / seconds from job submission to the last result of the bounded
job (the Flink mini-cluster runs in the PyFlink JVM already started, like Tidewater's measurement
that excludes JVM start-up). Verified: window totals equal the generator's totals.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from benchmarks import fill
from benchmarks.result import ScenarioResult, ratio
from benchmarks.sizes import Sizes
from benchmarks.stack import REPO
from lakehouse.config import TidewaterConfig

FLINK_PYTHON = REPO / "benchmarks" / ".venv-flink" / "bin" / "python"
JARS = REPO / ".cache" / "jars" / "flink"
SETUP = "run benchmarks/setup-flink.sh (separate venv + connector jar through Maven profile bench)"


def flink_missing() -> str | None:
    if not FLINK_PYTHON.exists():
        return f"Flink is absent (no {FLINK_PYTHON.relative_to(REPO)}); {SETUP}"
    if not any(JARS.glob("flink-sql-connector-kafka-*.jar")):
        return f"the Flink SQL Kafka connector jar is absent from .cache/jars/flink; {SETUP}"
    return None


def run(spark: Any, cfg: TidewaterConfig, sizes: Sizes, work: Path, context: dict[str, Any]) -> ScenarioResult:
    from benchmarks.s1_catchup import PIPELINE
    from lakehouse.pipeline import load_pipeline

    res = ScenarioResult(6, "Flink peer catch-up")
    missing = flink_missing()
    if missing:
        return res.skip(missing)
    catchup = context.get("catchup")
    if catchup is None:  # run alone: fill the topic the way scenario 1 does
        p = load_pipeline(PIPELINE, cfg.pipelines)
        gen = fill.events(spark, sizes.catchup_events, sizes.sensors, fill.base_ms())
        fill.fill_topic(cfg, p.topic, gen)
        from spark_jobs.io.kafka_admin import offsets

        catchup = {"topic": p.topic, "events": sizes.catchup_events, "expected": fill.expected_totals(gen),
                   "offsets": {part: end for part, (_, end) in offsets(cfg, p.topic).items()}}
    jar = sorted(JARS.glob("flink-sql-connector-kafka-*.jar"))[-1]
    res.settings = {"flink": "apache-flink 2.2.1 (PyPI), local mini-cluster", "connector": jar.name,
                    "parallelism": 2, "watermark": "2 minutes", "mini_batch": "1 s / 10000 rows"}
    cmd = [str(FLINK_PYTHON), str(REPO / "benchmarks" / "flink_job.py"), "--bootstrap", cfg.kafka.bootstrap,
           "--topic", catchup["topic"], "--jar", str(jar),
           "--until", ";".join(f"partition:{k},offset:{v}" for k, v in sorted(catchup["offsets"].items()))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=work)
    (work / "flink.log").write_text(proc.stdout + proc.stderr)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return res.fail(f"Flink job exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-600:]}")
    out = json.loads(lines[-1])
    eps = round(catchup["events"] / out["seconds"]) if out["seconds"] else None
    res.metrics["flink"] = {"seconds": out["seconds"], "events_per_s": eps}
    res.add_checks(fill.compare_totals(catchup["expected"], out["totals"], "flink"))
    res.ratios = {"tidewater/flink": ratio(catchup.get("a_events_per_s"), eps)}
    return res.finish()
