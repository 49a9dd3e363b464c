"""The speed job's liveness signal: the stage signature moves while Spark work advances, and the
``.alive`` file gets a new time then (the supervisor's proof that a long micro-batch is working)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.speed.liveness import Liveness, stage_signature

pytestmark = pytest.mark.spark


def test_signature_moves_while_tasks_complete_and_is_empty_when_idle(spark: Any, tmp_path: Path) -> None:
    assert stage_signature(spark) == ()
    # 6 tasks of 0.7 s each on local[1]: the active stage's completed-task count climbs for ~4 s
    sleepy = spark.range(0, 6, 1, 6).selectExpr("reflect('java.lang.Thread', 'sleep', cast(700 as bigint)) AS slept")
    job = threading.Thread(target=sleepy.collect)
    job.start()
    seen = []
    while job.is_alive():
        seen.append(stage_signature(spark))
        time.sleep(0.2)
    job.join()
    moving = {s for s in seen if s}
    assert len(moving) >= 3, seen  # the same stage with 0, 1, 2, ... completed tasks
    assert len({stage for s in moving for stage, _ in s}) == 1
    assert stage_signature(spark) == ()


def test_the_file_gets_a_new_time_only_when_work_advanced(spark: Any, tmp_path: Path, monkeypatch: Any) -> None:
    import spark_jobs.speed.liveness as liveness

    monkeypatch.setattr(liveness, "LOOK_EVERY_S", 0.0)
    path = tmp_path / "speed-p-v1.alive"
    alive = Liveness(spark, path)
    written = path.read_text()
    assert written.endswith("+00:00")
    path.write_text("2000-01-01T00:00:00+00:00")  # as if written long ago
    alive.beat()  # idle: no active stage, nothing advanced
    assert path.read_text() == "2000-01-01T00:00:00+00:00"
    sleepy = spark.range(0, 4, 1, 4).selectExpr("reflect('java.lang.Thread', 'sleep', cast(700 as bigint)) AS slept")
    job = threading.Thread(target=sleepy.collect)
    job.start()
    while job.is_alive() and path.read_text().startswith("2000"):
        alive.beat()
        time.sleep(0.2)
    job.join()
    assert not path.read_text().startswith("2000"), "a running stage did not refresh the file"


def test_a_running_context_is_not_stopped_and_a_gone_one_is(spark: Any) -> None:
    from types import SimpleNamespace

    from spark_jobs.speed.pipeline_run import context_stopped

    assert context_stopped(spark) is False
    assert context_stopped(SimpleNamespace(sparkContext=SimpleNamespace(_jsc=None))) is True  # the JVM is gone
