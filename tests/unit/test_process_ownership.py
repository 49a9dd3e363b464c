"""PID-file ownership and signalling with real processes: a PID file only names our process when
the command-line marker and the recorded start time both match, and a stop never signals process
group 0 or the caller's own group."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from infra.services.process import ManagedProcess, wait_until

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
PF_KTHREAD = 0x00200000


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _start_time(pid: int) -> int:
    return int(_stat(pid)[19])  # field 22 of proc(5): start time in clock ticks after boot


def _wait_for_command_line(pid: int) -> None:
    """Popen returns when the exec has closed the child's descriptors, which is before the kernel sets
    the new command line: under load the parent can read an empty one, which ``_owned`` takes for its
    own process between fork and exec (a CI run failed so). A reused PID's exec is long done."""
    assert wait_until(lambda: bool(Path(f"/proc/{pid}/cmdline").read_bytes()), 10, interval=0.01)


def _alive(pid: int) -> bool:
    try:
        return _stat(pid)[0] != "Z"
    except FileNotFoundError:
        return False


def _kernel_thread() -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_stat(int(entry.name))[6]) & PF_KTHREAD:
                    return int(entry.name)
            except (FileNotFoundError, IndexError, ValueError):
                continue
    return None


def _run_isolated(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python with a session (and process group) of its own, so that a
    wrong ``killpg`` hits that child, never the test runner."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=REPO, start_new_session=True, timeout=60)


def test_start_records_marker_and_start_time_and_stop_ends_it(tmp_path: Path) -> None:
    proc = ManagedProcess("sleeper", tmp_path / "run", tmp_path / "logs")
    pid = proc.start(["sleep", "60"])
    try:
        lines = proc.pid_file.read_text().splitlines()
        assert lines == [str(pid), "sleep", str(_start_time(pid))]
        assert proc.running() and proc.pid() == pid
        assert proc.stop(timeout=5) is True
        assert not _alive(pid) and not proc.pid_file.exists()
    finally:
        subprocess.run(["kill", "-9", str(pid)], capture_output=True)


def test_reused_pid_with_another_start_time_is_not_ours(tmp_path: Path) -> None:
    """PID reuse: same PID and a command line that contains the marker, but another start time."""
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        _wait_for_command_line(other.pid)
        proc = ManagedProcess("job", tmp_path, tmp_path)
        proc.pid_file.write_text(f"{other.pid}\nsleep 60\n{_start_time(other.pid) - 1}\n")
        assert proc.pid() is None and not proc.running()
        assert proc.stop(timeout=1) is False
        assert _alive(other.pid), "a process we do not own is never signalled"
        # the same file with the right start time is ours
        proc.pid_file.write_text(f"{other.pid}\nsleep 60\n{_start_time(other.pid)}\n")
        assert proc.pid() == other.pid
        # ... but not when the command line lacks the marker
        proc.pid_file.write_text(f"{other.pid}\norg.example.Main\n{_start_time(other.pid)}\n")
        assert proc.pid() is None
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("with_start_time", [False, True])
def test_stale_pid_file_on_a_kernel_thread_signals_nothing(with_start_time: bool) -> None:
    kthread = _kernel_thread()
    if kthread is None:
        pytest.skip("no kernel threads visible in /proc (PID namespace)")
    started = f"{_start_time(kthread)}\\n" if with_start_time else ""
    out = _run_isolated(f"""
        import tempfile
        from pathlib import Path
        from infra.services.process import ManagedProcess
        d = Path(tempfile.mkdtemp())
        proc = ManagedProcess("speed-x", d, d)
        proc.pid_file.write_text("{kthread}\\nspark_jobs.speed\\n{started}")
        print("running", proc.running())
        proc.pid_file.write_text("{kthread}\\nspark_jobs.speed\\n{started}")
        print("stopped", proc.stop(timeout=1))
    """)
    assert out.returncode == 0, f"the stop signalled its own process group (rc {out.returncode}): {out.stderr}"
    assert out.stdout.split() == ["running", "False", "stopped", "False"], out.stdout + out.stderr


def test_stop_never_signals_the_callers_own_group() -> None:
    """A process of our own group recorded in a PID file: stop ends that process only."""
    out = _run_isolated("""
        import subprocess, tempfile
        from pathlib import Path
        from infra.services.process import ManagedProcess
        child = subprocess.Popen(["sleep", "60"])  # same process group as this interpreter
        stat = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        d = Path(tempfile.mkdtemp())
        proc = ManagedProcess("job", d, d)
        proc.pid_file.write_text(f"{child.pid}\\nsleep 60\\n{stat[19]}\\n")
        print("stopped", proc.stop(timeout=5), "exit", child.wait(timeout=10))
    """)
    assert out.returncode == 0, f"the stop signalled its own process group (rc {out.returncode}): {out.stderr}"
    assert out.stdout.split() == ["stopped", "True", "exit", "-15"], out.stdout + out.stderr


@pytest.mark.parametrize("content", ["0\nsleep\n", "-1\nsleep\n", "garbage\n"])
def test_pid_file_naming_no_process_of_ours(tmp_path: Path, content: str) -> None:
    proc = ManagedProcess("job", tmp_path, tmp_path)
    proc.pid_file.write_text(content)
    started = time.monotonic()
    assert proc.stop(timeout=1) is False
    assert time.monotonic() - started < 1


def test_a_niced_start_lowers_the_process_and_its_session(tmp_path: Path) -> None:
    """``nice``: the process (and what it starts) runs at that nice value, and where the kernel groups
    scheduling by session (autogroup), the session's own weight is lowered too: without it a nice
    value does nothing against the processes of other sessions (every service has its own)."""
    import os

    proc = ManagedProcess("niced", tmp_path / "run", tmp_path / "logs")
    pid = proc.start(["sh", "-c", "sleep 60 & wait"], nice=7)
    try:
        assert _wait(lambda: Path(f"/proc/{pid}/comm").read_text().strip() == "sh")  # nice exec'd its command
        children = Path(f"/proc/{pid}/task/{pid}/children")
        assert _wait(lambda: children.read_text().split() != [])
        for member in (pid, int(children.read_text().split()[0])):
            assert os.getpriority(os.PRIO_PROCESS, member) == 7
        autogroup = Path(f"/proc/{pid}/autogroup")
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == "7"
            assert Path("/proc/self/autogroup").read_text() != autogroup.read_text()
        assert proc.running() and proc.pid() == pid, "the marker and start time survive nice's exec"
    finally:
        proc.stop(timeout=5)


def _wait(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_two_starts_at_once_spawn_one_process(tmp_path: Path) -> None:
    """Two ``ManagedProcess.start`` of one name in two processes at once (two ``tidewater speed start``:
    before the start lock, both spawned a job, the PID file named either, and both commands could fail
    while the other job ran unseen). The test holds the start lock as a start in progress would: neither
    starter spawns while it is held; after, one process runs and both starters name it."""
    run_dir, log_dir = tmp_path / "run", tmp_path / "logs"
    token = f"tidewater-test-{tmp_path.name}"  # the job's argument is token + "-job": the starters' hold only token
    starter = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from infra.services.process import ManagedProcess
        job = [sys.executable, "-c", "import time; time.sleep(120)", {token!r} + "-job"]
        print(ManagedProcess("job", Path({str(run_dir)!r}), Path({str(log_dir)!r})).start(job))
    """)
    proc = ManagedProcess("job", run_dir, log_dir)
    run_dir.mkdir()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    proc.pid_file.write_text(f"{ended.stdout.strip()}\nsome-job\n1\n")  # a stale one: each starter removes it
    try:
        with proc.start_lock():
            starters = [subprocess.Popen([sys.executable, "-c", starter], cwd=REPO, stdout=subprocess.PIPE, text=True)
                        for _ in range(2)]
            time.sleep(2.0)
            assert [s.poll() for s in starters] == [None, None]  # both wait for the lock
            assert proc.pid_file.read_text().startswith(ended.stdout.strip()) and not _jobs(token)
        pids = {int(s.communicate(timeout=60)[0].strip()) for s in starters}
        assert [s.returncode for s in starters] == [0, 0]
        assert len(pids) == 1 and _jobs(token) == pids and proc.pid() in pids
    finally:
        proc.stop(timeout=5)
        for pid in _jobs(token):
            subprocess.run(["kill", "-9", str(pid)], check=False)


def _jobs(token: str) -> set[int]:
    """Live processes whose command line holds ``token`` + "-job"."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and f"{token}-job".encode() in (entry / "cmdline").read_bytes() and _alive(int(entry.name)):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def test_a_stop_leaves_the_pid_file_of_a_start_that_came_after(tmp_path: Path) -> None:
    """``stop`` ends its process, then removes the PID file only if it still names that process: a start
    that came in between (the supervisor's, say) keeps its file, and its job stays visible to
    ``status`` and ``stop``. The test writes that start's file under the start lock, as ``start`` does."""
    import threading

    from infra.services.proc_facts import start_time

    proc = ManagedProcess("job", tmp_path / "run", tmp_path / "logs")
    first = proc.start([sys.executable, "-c", "import time; time.sleep(120)", "first-job"])
    _wait_for_command_line(first)
    second = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "second-job"],
                              start_new_session=True)
    _wait_for_command_line(second.pid)
    try:
        with proc.start_lock():
            stopping = threading.Thread(target=proc.stop, kwargs={"timeout": 10})
            stopping.start()
            assert wait_until(lambda: not _alive(first), 10)
            proc.pid_file.write_text(f"{second.pid}\nsecond-job\n{start_time(second.pid)}\n")
        stopping.join(30)
        assert not stopping.is_alive() and proc.pid() == second.pid
    finally:
        second.kill()
        second.wait()
