"""``python -m benchmarks.soak --quick``: 3 minutes at 1,000 events/s on its own 3-broker stack with
Airflow, the speed job, one broker, the Airflow scheduler and the Thrift server each killed (-9) once.

The command must exit 0, and its result JSON must show that the checks really ran and passed on real
figures: every fault injected and recovered (the speed job by Tidewater's supervisor DAG, not by the
soak), every offset in bronze exactly once for as many records as were sent, ``serving.<p>`` equal to
the oracle on a non-trivial number of batch and speed windows, and the batch DAG publishing on its
schedule. Timings and flatness are not asserted (3 minutes with four faults say nothing about growth).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
SEED = 14


@pytest.fixture(scope="module")
def soak_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out_dir = tmp_path_factory.mktemp("soak")
    argv = [sys.executable, "-m", "benchmarks.soak", "--quick", "--seed", str(SEED), "--out", str(out_dir)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          cwd=Path(__file__).resolve().parents[2]) as child:  # benchmarks/ beside the packages
        try:
            stdout, stderr = child.communicate(timeout=1500)
        except subprocess.TimeoutExpired:
            child.terminate()  # SIGTERM: the soak stops its stack before it exits
            stdout, stderr = child.communicate(timeout=300)
    proc = subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)
    print(proc.stdout[-5000:], proc.stderr[-3000:])
    results = sorted(Path(out_dir).glob("*-soak-quick.json"))
    assert results, f"no result JSON in {out_dir}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    return proc, json.loads(results[-1].read_text())


def test_soak_command_passes_every_check(soak_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    proc, run = soak_run
    failed = [c for c in run["checks"] if not c["ok"]]
    assert proc.returncode == 0 and run["ok"] and not failed, f"{run.get('reason')}: {failed} {run['notes']}"
    assert run["seed"] == SEED and run["git"]["commit"]
    assert Path(run["files"]["chart"]).stat().st_size > 10_000 and Path(run["files"]["markdown"]).exists()


def test_each_fault_injected_once_and_recovered(soak_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    _, run = soak_run
    faults = {f["kind"]: f for f in run["faults"]}
    assert sorted(faults) == ["airflow_scheduler", "kafka_broker", "speed_job", "thrift_server"], run["faults"]
    for f in faults.values():
        assert f["ok"] and f["injected_s"] is not None and f["recovered_s"] >= f["injected_s"], f
    assert faults["speed_job"]["recovered_by"].startswith("Tidewater: the tidewater_speed supervisor"), faults["speed_job"]
    for kind in ("kafka_broker", "airflow_scheduler", "thrift_server"):
        assert "tidewater up --only" in faults[kind]["recovered_by"], faults[kind]
    # the processes really were replaced: each killed one shows a second PID in the samples
    pids = {name: {s["pid"][name] for s in run["samples"] if name in s.get("pid", {})}
            for name in ("speed-sensor_readings", "thrift_server", "airflow-scheduler")}
    assert all(len(found) >= 2 for found in pids.values()), pids


def test_exactly_once_and_serving_equals_oracle_on_real_volumes(
        soak_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    _, run = soak_run
    m, s = run["metrics"], run["settings"]
    assert m["events"] >= 0.95 * s["rate"] * s["seconds"], m
    eo = m["exactly_once"]
    assert eo["offset_problems"] == [] and eo["records_in_topic"] == m["events"] == eo["bronze_rows"], eo
    assert eo["quarantine_rows"] == 0, eo
    oracle = m["oracle"]
    assert oracle["differences"] == 0 and oracle["serving_rows"] == oracle["windows"], oracle
    assert oracle["batch_windows"] >= 50 and oracle["speed_windows"] >= 50, oracle  # 100 sensors x minutes
    # the final run publishes, or exits 3 (NothingToDo) when the DAG's last publish already read the last bronze
    assert m["scheduled_runs_published"] >= 1 and m["final_batch_exit"] in (0, 3), m
    assert m["micro_batches"] >= 2 and len(run["samples"]) >= s["seconds"] // 10 - 2, m
