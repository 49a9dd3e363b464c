"""Which checkpoint folders ``tidewater maintenance`` removes: those of speed versions that are neither
active nor the rollback target, with their warm-up scratch tables; never a pending-rows folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse import naming
from lakehouse.config import load_config
from spark_jobs.maintenance.job import retired_checkpoints

pytestmark = pytest.mark.unit


def test_retired_versions_lose_their_checkpoint_and_warm_up_folders_only(tmp_path: Path) -> None:
    config = tmp_path / "tidewater.yml"
    config.write_text(f"data_dir: {tmp_path / 'data'}\n")
    cfg = load_config(config, env={})
    root = naming.checkpoint_dir(cfg, "sensor_readings", "stream", 1).parent
    names = ["stream_v1", "stream_v1.warm-up", "stream_v1.ops-pending", "speed_v2", "stream_v3",
             "stream_v3.warm-up", "stream_v4", "stream_v4.warm-up", "ingest_v1", "stream_vx"]
    for name in names:
        (root / name).mkdir(parents=True)
    retired = sorted(p.name for p in retired_checkpoints(cfg, "sensor_readings", active=4))  # rollback target 3
    assert retired == ["speed_v2", "stream_v1", "stream_v1.warm-up"]
