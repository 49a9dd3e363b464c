"""Which checkpoint a speed version's ``stream`` query runs, so that each speed table is written by one
query lineage at a time and every lineage goes on exactly where the previous writer's rows end.

A version's speed table is written by a sequence of lineages: a replay (the ``speed`` role only) builds
it; the main job (``ingest`` + ``speed``) takes it over at the switch; after a switch away, a rollback's
catch-up continues it from where it froze; the main job takes it over again. The lineage writing each
version is recorded (``lakehouse.speed_versions.writer``). A query resumes a checkpoint only when it is
the recorded writer, runs the same roles and has planned a micro-batch; otherwise it starts a NEW
lineage (the next folder ``naming.checkpoint_dir`` never used) whose speed floor is where the previous
writer's rows end (``frontier``). So:

* no offset is counted twice in a speed table: a frozen lineage is never resumed once another lineage
  has counted past it;
* the ingest role of a new main lineage resumes after what bronze and quarantine hold
  (``io.lineage.ingest_floors``), so no offset is ingested twice either.

Session windows keep Spark's state in their checkpoint, so their ``speed`` query always continues its
version's one ``speed_v<N>`` lineage (replay, main job and rollback alike), and their ``ingest`` query
has a lineage of its own: this module is for the stateless ``stream`` query.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from lakehouse.speed_versions import set_writer, writer
from spark_jobs.io.lineage import furthest, is_new, saved_floors_path, taken_over_offsets


def version_checkpoints(cfg: TidewaterConfig, pipeline: str, version: int) -> list[Path]:
    """Every checkpoint folder of any lineage of version ``version`` (either query kind)."""
    root = naming.checkpoint_dir(cfg, pipeline, "speed", version).parent
    return sorted(d for d in root.glob(f"*_v{version}*")
                  if d.is_dir() and naming.checkpoint_version(d.name) == version and not d.name.startswith("ingest_"))


def recorded_writer(cfg: TidewaterConfig, p: Pipeline, version: int) -> Path | None:
    """The lineage writing version ``version``: the recorded one; for a data folder written before writers
    were recorded, its ``stream_v<N>`` checkpoint, else its ``speed_v<N>`` one (None: nothing wrote it)."""
    name = writer(cfg, p.name, version)
    if name:
        return naming.checkpoint_dir(cfg, p.name, "speed", version).parent / name
    for query in ("stream", "speed"):
        folder = naming.checkpoint_dir(cfg, p.name, query, version)
        if not is_new(folder):
            return folder
    return None


def next_lineage(cfg: TidewaterConfig, pipeline: str, query: str, version: int) -> Path:
    """The first checkpoint folder of ``query``/``version`` that no lineage has used."""
    lineage = 1
    while (folder := naming.checkpoint_dir(cfg, pipeline, query, version, lineage)).exists():
        lineage += 1
    return folder


def query_kind(checkpoint: Path) -> str:
    match = naming.CHECKPOINT_NAME.match(checkpoint.name)
    return match.group("query") if match else ""


def choose(cfg: TidewaterConfig, p: Pipeline, query: str, version: int) -> tuple[Path, Path | None]:
    """(the checkpoint the ``query`` of ``version`` runs, the lineage it takes the speed table over from:
    None when it resumes its own lineage or builds the table from the start)."""
    last = recorded_writer(cfg, p, version)
    if last is not None and query_kind(last) == query and not is_new(last):
        return last, None
    return next_lineage(cfg, p.name, query, version), last


def start_writing(cfg: TidewaterConfig, p: Pipeline, version: int, checkpoint: Path) -> None:
    """Record ``checkpoint`` as version ``version``'s writer, before its query writes anything."""
    set_writer(cfg, p.name, version, checkpoint.name)


def frontier(spark: Any, p: Pipeline, version: int, previous: Path) -> dict[str, int] | None:
    """{partition: offset} up to which ``previous`` (a lineage of ``version``) has counted into the speed
    table: its committed micro-batches, plus one a stop interrupted after its partials append
    (``io.lineage.taken_over_offsets``), and never below the speed floor it started from itself. None:
    it wrote nothing."""
    taken = None if is_new(previous) else taken_over_offsets(spark, p, version, previous, p.topic)
    saved = saved_floors_path(previous)
    started_at = json.loads(saved.read_text()).get("speed") if saved.exists() else None
    return furthest(taken, started_at)
