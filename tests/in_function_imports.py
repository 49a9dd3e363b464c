"""Imports at module top (a step of ``make lint``, and a unit test): an import inside a function may only
name a package of ``infra.deferred_imports.PACKAGES``.

An import under ``if TYPE_CHECKING:`` at module level is a module-top import.

Run: ``python -m tests.in_function_imports`` (exit 1 and ``path:line: import`` for each one not allowed).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from infra.deferred_imports import PACKAGES
from tests.import_cycles import PACKAGES as PROJECT_PACKAGES

REPO = Path(__file__).resolve().parent.parent
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def in_function_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement inside a function (at any depth) of ``tree``."""
    def walk(node: ast.AST, in_function: bool) -> Iterator[ast.Import | ast.ImportFrom]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom) and in_function:
                yield child
            else:
                yield from walk(child, in_function or isinstance(child, _FUNCTIONS))
    return walk(tree, False)


def imported_packages(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The top-level names a statement imports (a relative import is the project's own: ``.``)."""
    if isinstance(node, ast.ImportFrom):
        return {"." if node.level else (node.module or "").split(".")[0]}
    return {alias.name.split(".")[0] for alias in node.names}


def violations(source: str, allowed: frozenset[str] = PACKAGES) -> list[tuple[int, str]]:
    """(line, statement) of each in-function import in ``source`` that names a package not in ``allowed``."""
    return [(node.lineno, ast.unparse(node)) for node in in_function_imports(ast.parse(source))
            if not imported_packages(node) <= allowed]


def checked_files(repo: Path = REPO) -> list[str]:
    """The project's Python files git tracks or would track."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--",
                          *(f"{package}/*.py" for package in PROJECT_PACKAGES)],
                         cwd=repo, capture_output=True, text=True, check=True).stdout
    return sorted(name for name in set(out.split("\0")) if name and (repo / name).is_file())


def find(repo: Path = REPO) -> list[str]:
    """``path:line: statement`` for every in-function import not allowed."""
    return [f"{name}:{line}: {statement}" for name in checked_files(repo)
            for line, statement in violations((repo / name).read_text(encoding="utf-8"))]


def main() -> int:
    hits = find()
    for hit in hits:
        print(hit)
    if hits:
        print(f"in-function imports: {len(hits)} (move each to module top; a heavy third-party package goes "
              f"into infra/deferred_imports.py with its measured import cost)")
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
