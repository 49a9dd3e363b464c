"""``tidewater batch <p>``'s step flags (write, audit, publish) are checked before any Spark starts: one
``tidewater: `` line and exit 2 for a step without the run it acts on, or two steps at once."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("flags", "problem"), [
    (["--audit"], "--audit needs --run-id RUN_ID"),
    (["--publish"], "--publish needs --run-id RUN_ID"),
    (["--audit", "--publish", "--run-id", "r"], "--audit and --publish exclude each other"),
    (["--stage-only", "--audit", "--run-id", "r"], "--stage-only and --audit exclude each other"),
])
def test_a_step_without_its_run_or_two_steps_at_once_are_refused(
        flags: list[str], problem: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tidewater.cli import run

    monkeypatch.delenv("TIDEWATER_MODE", raising=False)
    assert run(["batch", "sensor_readings", *flags]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tidewater: batch: ") and problem in lines[0], lines
