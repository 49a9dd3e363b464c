"""What importing costs: each package of ``infra.deferred_imports`` in a fresh interpreter, the CLI's start
(``tidewater --help``) and the DAG files' import, and how many imports sit inside functions.

``python -m benchmarks.import_costs [--runs N] [--root PATH]`` writes ``results/<time>-import_costs.md``.
``--root`` measures the CLI, the DAG files and the in-function imports of another checkout of the project
(another commit, for a before/after); the packages are always this environment's.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks.harness import save_markdown_table
from infra.deferred_imports import DEFERRED
from tests.import_cycles import PACKAGES as PROJECT_PACKAGES
from tests.in_function_imports import REPO, checked_files, imported_packages, in_function_imports

DAG_FILES = "[importlib.import_module('dags.' + p.stem) for p in pathlib.Path('dags').glob('*.py')]"


def _seconds(code: str, root: Path, environ: dict[str, str]) -> float:
    """Wall time of ``python -c code`` in a fresh interpreter at ``root`` (its start included)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=root, env=environ, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - started


def _import_seconds(module: str, root: Path, environ: dict[str, str], after_cli: bool = False) -> float:
    """The time ``import module`` takes inside a fresh interpreter (its start left out); ``after_cli``: once
    the CLI and its commands are imported (what the module would add to ``tidewater --help``)."""
    cli = "from tidewater.cli import build_parser\nbuild_parser()\n" if after_cli else ""
    return _timed(cli, f"import {module}", root, environ)


def _timed(setup: str, statement: str, root: Path, environ: dict[str, str]) -> float:
    """The time ``statement`` takes in a fresh interpreter once ``setup`` ran."""
    code = f"import time\n{setup}t = time.perf_counter()\n{statement}\nprint(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=environ, check=True, capture_output=True,
                         text=True, timeout=600).stdout
    return float(out.split()[-1])


def in_function_counts(root: Path) -> Counter[str]:
    """In-function import statements under ``root``, by what they import: ``project``, ``stdlib`` or the
    third-party package's name."""
    counts: Counter[str] = Counter()
    for name in checked_files(root):
        for node in in_function_imports(ast.parse((root / name).read_text(encoding="utf-8"))):
            package = min(imported_packages(node))
            counts["project" if package in (".", *PROJECT_PACKAGES) else
                   "stdlib" if package in sys.stdlib_module_names else package] += 1
    return counts


def _row(what: str, samples: list[float], after_cli: list[float] | None = None) -> str:
    added = f"{statistics.median(after_cli):.3f}" if after_cli else "-"
    return f"| {what} | {statistics.median(samples):.3f} | {min(samples):.3f} | {added} | {len(samples)} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.import_costs", description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per figure (median and minimum)")
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout whose CLI and DAG files are timed")
    parser.add_argument("--no-packages", action="store_true", help="time the CLI and the DAG files only")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    environ = {**os.environ, "PYTHONPATH": str(root), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    packages = [] if args.no_packages else [d for d in DEFERRED if d.seconds is not None]
    lines = [_row(f"`import {d.measured}`", [_import_seconds(d.measured, root, environ) for _ in range(args.runs)],
                  [_import_seconds(d.measured, root, environ, after_cli=True) for _ in range(args.runs)])
             for d in packages]
    lines.append(_row("`tidewater --help` (wall, interpreter start included)",
                      [_seconds("import sys\nfrom tidewater.cli import main\ntry:\n    main(['--help'])\n"
                                "except SystemExit:\n    pass", root, environ) for _ in range(args.runs)]))
    lines.append(_row("`python -c pass` (wall: the interpreter start alone)",
                      [_seconds("pass", root, environ) for _ in range(args.runs)]))
    lines.append(_row("the DAG files' import once airflow.sdk is imported",
                      [_timed("import importlib, pathlib\nimport airflow.sdk\n", DAG_FILES, root, environ)
                       for _ in range(args.runs)]))
    counts = in_function_counts(root)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    setting = (f"CLI, DAG files and in-function imports of {root} at commit {commit}; load average "
               f"{os.getloadavg()[0]:.2f} at the end; in-function imports: {sum(counts.values())} "
               f"({', '.join(f'{k} {v}' for k, v in counts.most_common())})")
    save_markdown_table("import_costs", "Import costs", setting, ["what", "median s", "min s", "median s after the CLI's imports", "runs"], lines)
    print(setting)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
