"""Scenario 6: Flink SQL (PyFlink, separate venv) over the same pre-filled topic as scenario 1.

The job writes its 1-minute windows with INSERT INTO a filesystem sink (JSON files under
``<work>/flink-windows``), checkpointing on, EXACTLY_ONCE (benchmarks/flink_job.py). Catch-up throughput =
events / seconds from job submission to the end of the bounded job (the Flink mini-cluster runs in the PyFlink
JVM already started, like Tidewater's measurement that excludes JVM start-up). Verified: the totals read
back from the committed sink files equal the generator's totals, no uncommitted file is left and no
window is written twice. Flink's own log (checkpoints, part-file commits) goes to ``<work>/flink-logs``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from benchmarks import fill
from benchmarks.result import ScenarioResult, ratio
from benchmarks.s1_catchup import PIPELINE
from benchmarks.sizes import Sizes
from benchmarks.stack import REPO
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import load_pipeline
from spark_jobs.io.kafka_admin import offsets

CHECKPOINT_S = 3
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
    res = ScenarioResult(6, "Flink peer catch-up")
    missing = flink_missing()
    if missing:
        return res.skip(missing)
    catchup = context.get("catchup")
    if catchup is None:  # run alone: fill the topic the way scenario 1 does
        p = load_pipeline(PIPELINE, cfg.pipelines)
        gen = fill.events(spark, sizes.catchup_events, sizes.sensors, fill.base_ms())
        fill.fill_topic(cfg, p.topic, gen)

        catchup = {
            "topic": p.topic,
            "events": sizes.catchup_events,
            "expected": fill.expected_totals(gen),
            "offsets": {part: end for part, (_, end) in offsets(cfg, p.topic).items()},
        }
    jar = sorted(JARS.glob("flink-sql-connector-kafka-*.jar"))[-1]
    sink, checkpoints = work / "flink-windows", work / "flink-checkpoints"
    for path in (sink, checkpoints, work / "flink-logs"):
        shutil.rmtree(path, ignore_errors=True)
    res.settings = {
        "flink": "apache-flink 2.2.1 (PyPI), local mini-cluster",
        "connector": jar.name,
        "parallelism": 2,
        "watermark": "2 minutes",
        "mini_batch": "1 s / 10000 rows",
        "sink": {
            "connector": "filesystem (INSERT INTO, one JSON row per window)",
            "format": "json",
            "checkpoint_interval_s": CHECKPOINT_S,
            "checkpointing_mode": "EXACTLY_ONCE",
            "rollover_interval_s": CHECKPOINT_S,
            "checkpoint_storage": "filesystem",
        },
    }
    options = {
        "--bootstrap": cfg.kafka.bootstrap,
        "--topic": catchup["topic"],
        "--jar": str(jar),
        "--until": ";".join(f"partition:{k},offset:{v}" for k, v in sorted(catchup["offsets"].items())),
        "--sink": str(sink),
        "--checkpoints": str(checkpoints),
        "--checkpoint-s": str(CHECKPOINT_S),
    }
    cmd = [str(FLINK_PYTHON), str(REPO / "benchmarks" / "flink_job.py"), *(x for kv in options.items() for x in kv)]
    env = {**os.environ, "FLINK_LOG_DIR": str(work / "flink-logs")}  # checkpoint and part-file commit lines
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=work, env=env)
    (work / "flink.log").write_text(proc.stdout + proc.stderr)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return res.fail(f"Flink job exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-600:]}")
    out = json.loads(lines[-1])
    eps = round(catchup["events"] / out["seconds"]) if out["seconds"] else None
    res.metrics["flink"] = {"seconds": out["seconds"], "events_per_s": eps, "sink_files": out["files"]}
    res.add_checks(fill.compare_totals(catchup["expected"], out["totals"], "flink"))
    res.check("flink: uncommitted sink files", 0, out["uncommitted"])
    res.check("flink: windows written twice", 0, out["duplicates"])
    res.ratios = {"tidewater/flink": ratio(catchup.get("a_events_per_s"), eps),
                  "minimal spark job/flink": ratio(catchup.get("b_events_per_s"), eps),
                  "same-work script/flink": ratio(catchup.get("d_events_per_s"), eps)}
    return res.finish()
