"""``python -m benchmarks.bench`` and ``python -m benchmarks.soak`` stop their isolated stack when they get SIGTERM: the signal
ends them as Ctrl-C does, so the ``finally`` blocks that stop brokers and jobs run."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import sys, time
from pathlib import Path
from benchmarks.stack import stop_stack_on_term
stop_stack_on_term("bench")
marker = Path(sys.argv[1])
try:
    print("ready", flush=True)
    time.sleep(60)
finally:
    marker.write_text("stack stopped")
"""


def test_sigterm_runs_the_finally_blocks_and_names_the_signal(tmp_path: Path) -> None:
    marker = tmp_path / "stopped"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(marker)], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 1, err
    assert marker.read_text() == "stack stopped"
    assert "tidewater: bench stopped by signal 15" in err
