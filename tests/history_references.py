"""The history check (part of ``make lint``): no pointer to a development step in code, tests or docs.

A reference such as "stop" or "issue" followed by a number names a moment in the project's history, not
anything a reader of today's code can look up. The reason or the measured figure stays; the pointer goes.
History lives in git log and CHANGELOG.md.

``python -m tests.history_references`` checks every file git tracks or would track (untracked files that
are not ignored too) and prints ``path:line: text`` for each reference; it exits 1 if it found any.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the word stop, issue or defect (any case, singular or plural), a space, an optional "#" and a number
PATTERN = re.compile(r"\b(?:stops?|issues?|defects?) #?[0-9]+\b", re.IGNORECASE)
# generated results and the user-facing history keep their dates and names as they are
EXCLUDED_PREFIXES = ("benchmarks/results/",)
EXCLUDED_FILES = frozenset({"CHANGELOG.md"})


def references(text: str) -> list[tuple[int, str]]:
    """Each line of ``text`` that points at a development step: (line number from 1, the line stripped)."""
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1) if PATTERN.search(line)]


def checked_files(repo: Path = REPO) -> list[str]:
    """Tracked files and untracked ones git does not ignore, minus the excluded ones."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=repo,
                         capture_output=True, text=True, check=True).stdout
    names = sorted({name for name in out.split("\0") if name})
    return [name for name in names if name not in EXCLUDED_FILES and not name.startswith(EXCLUDED_PREFIXES)]


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):  # deleted in the work tree, or a submodule
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def find(repo: Path = REPO) -> list[str]:
    """``path:line: text`` for every reference in the checked files."""
    hits = []
    for name in checked_files(repo):
        text = _text(repo / name)
        if text is not None:
            hits += [f"{name}:{number}: {line[:200]}" for number, line in references(text)]
    return hits


def main() -> int:
    hits = find()
    for hit in hits:
        print(hit)
    if hits:
        print(f"history references: {len(hits)} (describe the code as it is today; history belongs in git log "
              "and CHANGELOG.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
