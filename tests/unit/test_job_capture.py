"""The job service's per-thread output capture and exit codes (infra/job_service/capture.py), with the real CLI
dispatch: what a command prints in one thread never reaches another's, and exit statuses are those of
a ``tidewater`` process."""

from __future__ import annotations

import sys
import threading

from infra.job_service.capture import capture, install, run_command
from tidewater.cli import run


def captured(argv: list[str]) -> tuple[int, str, str]:
    out: dict[str, list[str]] = {"out": [], "err": []}
    with capture(lambda stream, text: out[stream].append(text)):
        code = run_command(run, argv)
    return code, "".join(out["out"]), "".join(out["err"])


def test_exit_codes_and_streams_match_a_cli_process() -> None:
    install()
    code, out, err = captured(["sql"])  # argparse: a missing argument
    assert code == 2 and out == ""
    assert err.startswith("tidewater: the following arguments are required: query"), err
    code, out, err = captured(["--help"])
    assert code == 0 and "usage: tidewater" in out and err == ""

    def boom(argv: list[str]) -> int:
        raise RuntimeError("kaput")

    results: list[tuple[int, str]] = []

    def crash() -> None:
        errors: list[str] = []
        with capture(lambda stream, text: errors.append(text)):
            results.append((run_command(boom, []), "".join(errors)))

    worker = threading.Thread(target=crash)
    worker.start()
    worker.join()
    assert results[0][0] == 1 and "RuntimeError: kaput" in results[0][1]  # a traceback, exit 1
    assert run_command(lambda argv: sys.exit("fatal"), []) == 1


def test_threads_capture_only_their_own_output() -> None:
    install()
    seen: dict[int, list[str]] = {}
    barrier = threading.Barrier(4)

    def worker(n: int) -> None:
        lines: list[str] = []
        with capture(lambda stream, text: lines.append(text)):
            barrier.wait()
            for i in range(200):
                print(f"{n}:{i}")
        seen[n] = "".join(lines).split()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(seen[n] == [f"{n}:{i}" for i in range(200)] for n in range(4))
