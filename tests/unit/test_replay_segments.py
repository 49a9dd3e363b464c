"""The replay scenario's reading of the speed job's per-micro-batch step lines."""

from __future__ import annotations

from pathlib import Path

from benchmarks.replay_segments import logged_steps


def test_logged_steps_reads_each_micro_batch_line(tmp_path: Path) -> None:
    log = tmp_path / "replay.log"
    log.write_text("stream: warm-up rounds 17.4, 6.5 s\n"
                   "stream: batch 0: generated code 0.0s, parse 15.3s, late rows of an earlier lineage forgotten 3.9s, "
                   "keyed 3.6s, plan 32.1s, speed 11.3s, 133 classes compiled\n"
                   "some other line 2.0s\n"
                   "stream: batch 1: re-run check (bronze, partials written) 0.4s, parse 4.3s, 24 classes compiled\n")
    assert logged_steps(log) == {
        0: {"generated code": 0.0, "parse": 15.3, "late rows of an earlier lineage forgotten": 3.9, "keyed": 3.6,
            "plan": 32.1, "speed": 11.3},
        1: {"re-run check (bronze, partials written)": 0.4, "parse": 4.3},
    }
    assert logged_steps(tmp_path / "missing.log") == {}
