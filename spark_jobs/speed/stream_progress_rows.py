"""The stream query's own ``ops.stream_progress`` rows, committed beside the NEXT micro-batch.

A micro-batch's rows (input records, late events, watermark, duration; one per role) are known once
its data writes are done. Appending them is one more Delta commit (0.5-0.9 s on 2 cores, measured);
made in line it held back the next micro-batch, and so the freshness of every later event. Instead:

1. ``submit`` saves the rows to a pending file (written whole, then renamed) before the micro-batch
   returns, then a thread appends them (one commit tagged ``<lineage>/<micro-batch>``, like the data)
   while the next micro-batch runs, and deletes the file. At most one append is in flight: the next
   ``submit`` waits for the previous one, so rows commit in micro-batch order;
2. a graceful stop waits for the thread (``drain``: the appends of one pipeline, since a speed host runs
   many pipelines' streams and each waits only for its own);
3. after a crash, ``recover`` (before the query starts) appends every pending row that
   ``ops.stream_progress`` does not hold yet. A failed append fails the next micro-batch (fail
   closed): the query restarts and ``recover`` writes the rows.

The pending files live BESIDE the checkpoint (``<checkpoint>.ops-pending/``), not in it: a lineage
whose checkpoint is deleted after a kill -9 still gets the rows of its committed micro-batches.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from lakehouse import contracts
from lakehouse.progress_records import StreamProgress
from spark_jobs.io.delta_io import tagged_append
from spark_jobs.io.local_rows import local_frame
from spark_jobs.io.rerun import progress_written
from spark_jobs.shared.background import Inflight

APPEND_ATTEMPTS = 3
# appends under way in this process, per pipeline (its checkpoints' folder): a speed host runs many
# pipelines' streams, and one pipeline's micro-batch waits only for its own rows, never another's
_inflight: dict[Path, Inflight] = {}


def inflight(checkpoints: Path) -> Inflight:
    """The appends under way of the pipeline whose checkpoints are in folder ``checkpoints``."""
    return _inflight.setdefault(checkpoints, Inflight())


def drain(checkpoints: Path | None = None) -> None:
    """Wait for the appends under way (of one pipeline's ``checkpoints`` folder; None: every pipeline's);
    re-raises the first failure."""
    for runs in [inflight(checkpoints)] if checkpoints is not None else list(_inflight.values()):
        runs.drain()


def pending_dir(checkpoint: Path) -> Path:
    return checkpoint.with_name(f"{checkpoint.name}.ops-pending")


def encode(tag: str, rows: list[StreamProgress]) -> str:
    return json.dumps({"tag": tag, "rows": [r.to_json() for r in rows]})


def decode(text: str) -> tuple[str, list[StreamProgress]]:
    data = json.loads(text)
    return str(data["tag"]), [StreamProgress.from_json(r) for r in data["rows"]]


def append_with_retries(append: Any, written: Any, tag: str, attempts: int = APPEND_ATTEMPTS,
                        pause_s: float = 2.0) -> int:
    """``append()`` until it succeeds, at most ``attempts`` times; before each retry ``written()`` says
    whether the failed attempt committed after all (then nothing is appended twice). Returns the
    attempts made; the last failure is raised."""
    for attempt in range(1, attempts + 1):
        try:
            if attempt == 1 or not written():
                append()
            return attempt
        except Exception as exc:
            print(f"speed: ops.stream_progress append {tag} failed (attempt {attempt}/{attempts}): "
                  f"{str(exc).strip()[:1500]}", file=sys.stderr, flush=True)
            if attempt == attempts:
                raise
            time.sleep(pause_s * attempt)
    return attempts


class ProgressRows:
    def __init__(self, spark: Any, checkpoint: Path) -> None:
        self.spark, self.folder = spark, pending_dir(checkpoint)
        self.inflight = inflight(checkpoint.parent)

    def submit(self, tag: str, batch_id: int, rows: list[StreamProgress]) -> None:
        self.inflight.drain()
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{batch_id:020d}.json"
        scratch = path.with_suffix(".tmp")
        scratch.write_text(encode(tag, rows))
        os.replace(scratch, path)
        self.inflight.start(self.append, tag, rows, path)

    def append(self, tag: str, rows: list[StreamProgress], path: Path) -> None:
        """One tagged append (``append_with_retries``): a failure that stayed would surface only at the
        next micro-batch, and a stream that receives nothing more has none (its readers would see its
        last micro-batch's offsets as lag until then)."""
        schema = contracts.STREAM_PROGRESS.schema
        values = [list(r.row()) for r in rows]
        first = rows[0]
        append_with_retries(
            lambda: tagged_append(local_frame(self.spark, values, schema), contracts.STREAM_PROGRESS.name, tag),
            lambda: progress_written(self.spark, first.pipeline, first.run_id, first.batch_id), tag)
        path.unlink(missing_ok=True)

    def recover(self) -> int:
        """Append the pending rows that a crash left unwritten; returns how many micro-batches."""
        self.inflight.drain()
        written = 0
        for path in sorted(self.folder.glob("*.json")) if self.folder.exists() else []:
            tag, rows = decode(path.read_text())
            first = rows[0]
            if progress_written(self.spark, first.pipeline, first.run_id, first.batch_id):
                path.unlink()
                continue
            self.append(tag, rows, path)
            written += 1
        return written
