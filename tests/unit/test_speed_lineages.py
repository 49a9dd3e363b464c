"""Which checkpoint a speed version's stream query runs (``spark_jobs.speed.lineages.choose``): a query
resumes only the lineage that writes its version, with the same roles; any other start is a new lineage
that takes the table over from the recorded writer. The sequence is the one that double counted when a
rollback resumed the frozen main checkpoint: main v1, replay v2, switch, rollback to v1, and forward again."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse import naming
from lakehouse.config import TidewaterConfig, load_config
from lakehouse.pipeline import load_pipeline
from lakehouse.speed_versions import next_version
from spark_jobs.speed.lineages import choose, start_writing, version_checkpoints

pytestmark = pytest.mark.unit


def planned(checkpoint: Path) -> None:
    """What Spark leaves once a query planned its first micro-batch (``io.lineage.is_new`` reads it)."""
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1\n{}\n{}\n")


def run(cfg: TidewaterConfig, query: str, version: int) -> tuple[str, str | None]:
    """Start a lineage as ``speed.queries.start_stream`` does: (its checkpoint, what it takes over)."""
    p = load_pipeline("sensor_readings", cfg.pipelines)
    checkpoint, previous = choose(cfg, p, query, version)
    start_writing(cfg, p, version, checkpoint)
    if not (checkpoint / "offsets").exists():
        planned(checkpoint)
    return checkpoint.name, previous.name if previous else None


def test_a_version_switched_back_to_continues_in_new_lineages(tmp_path: Path) -> None:
    cfg = load_config(Path(__file__).resolve().parents[2] / "tidewater.yml", env={"TIDEWATER_DATA_DIR": str(tmp_path)})
    assert run(cfg, "stream", 1) == ("stream_v1", None)  # the first main job: builds v1
    assert run(cfg, "stream", 1) == ("stream_v1", None)  # a restart (kill -9): resumes its own lineage
    assert run(cfg, "speed", 2) == ("speed_v2", None)  # replay: builds v2 from the start
    assert run(cfg, "stream", 2) == ("stream_v2", "speed_v2")  # the main job takes v2 over at the switch
    assert run(cfg, "speed", 1) == ("speed_v1", "stream_v1")  # rollback: v1 continues where it froze
    assert run(cfg, "stream", 1) == ("stream_v1-l2", "speed_v1")  # never the frozen stream_v1 again
    assert run(cfg, "speed", 2) == ("speed_v2-l2", "stream_v2")  # forward again: never the old replay lineage
    assert run(cfg, "stream", 2) == ("stream_v2-l2", "speed_v2-l2")
    assert run(cfg, "stream", 2) == ("stream_v2-l2", None)  # and a restart resumes it
    assert [c.name for c in version_checkpoints(cfg, "sensor_readings", 2)] == [
        "speed_v2", "speed_v2-l2", "stream_v2", "stream_v2-l2"]
    assert next_version(cfg, "sensor_readings", 2) == 3


def test_checkpoint_names_carry_their_version() -> None:
    assert [naming.checkpoint_version(n) for n in ("stream_v1", "speed_v12-l3", "stream_v1.warm-up", "ingest")] == [
        1, 12, None, None]
