"""Per-thread capture of stdout/stderr, and a command's exit status as the CLI process would give it.

``install()`` replaces ``sys.stdout``/``sys.stderr`` with proxies once per process: a thread that
``capture``s sends what it writes to its own sink; every other thread writes to the real stream (the
service log). ``run_command`` maps ``SystemExit`` and uncaught exceptions to the exit codes and
output of a ``tidewater`` process (argparse errors 2, tracebacks 1).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any, TextIO

Sink = Callable[[str, str], None]  # (stream "out" | "err", text)
_local = threading.local()


class _Router:
    """A text stream that writes to the current thread's sink, or to ``real``."""

    def __init__(self, real: TextIO, stream: str) -> None:
        self._real, self._stream = real, stream

    def write(self, text: str) -> int:
        sink: Sink | None = getattr(_local, "sink", None)
        if sink is None:
            return self._real.write(text)
        if text:
            sink(self._stream, text)
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if getattr(_local, "sink", None) is None:
            self._real.flush()

    def isatty(self) -> bool:
        return False if getattr(_local, "sink", None) else self._real.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ... of the real stream
        return getattr(self._real, name)


def install() -> None:
    if not isinstance(sys.stdout, _Router):
        sys.stdout = _Router(sys.stdout, "out")
    if not isinstance(sys.stderr, _Router):
        sys.stderr = _Router(sys.stderr, "err")


@contextlib.contextmanager
def capture(sink: Sink) -> Iterator[None]:
    """While the block runs, this thread's ``print``s (stdout and stderr) go to ``sink``."""
    _local.sink = sink
    try:
        yield
    finally:
        _local.sink = None


def run_command(dispatch: Callable[[list[str]], int], argv: list[str]) -> int:
    """``dispatch(argv)``'s exit status, as ``sys.exit(dispatch(argv))`` in a process would give it."""
    try:
        return int(dispatch(argv) or 0)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()  # to sys.stderr: this thread's sink
        return 1
