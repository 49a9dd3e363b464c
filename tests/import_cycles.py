"""No import cycles between the project's modules (a step of ``make lint``, and a unit test).

Every import counts: at module top, inside functions and under ``TYPE_CHECKING`` (grimp's graph, the one
import-linter checks the layers on). A cycle is a strongly connected group of two or more modules.

Run: ``python -m tests.import_cycles`` (exit 1 and one line per cycle when there is one).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping

import grimp

PACKAGES = ("tidewater", "dags", "spark_jobs", "expectations", "infra", "lakehouse", "benchmarks")


def cycles(imports: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules in ``imports`` (module -> modules it imports),
    each sorted (Tarjan's algorithm, iterative; pure)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in imports:
        if root in index:
            continue
        work = [(root, iter(imports.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(imports.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def project_imports(packages: tuple[str, ...] = PACKAGES, cache: bool = True) -> dict[str, set[str]]:
    """Module -> the modules it imports, for every module of ``packages`` (each importable from sys.path)."""
    graph = grimp.build_graph(*packages) if cache else grimp.build_graph(*packages, cache_dir=None)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def main() -> int:
    found = cycles(project_imports())
    for group in found:
        print(f"import cycle: {' <-> '.join(group)}")
    if found:
        print(f"import cycles: {len(found)} (move the shared name to the module both sides need)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
