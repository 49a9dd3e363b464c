"""The DAG-run chart's data: every task that took time in either half, then the wall time."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


def test_rows_pair_each_task_without_and_with_the_service() -> None:
    from benchmarks.dag_chart import rows

    half = {"dag": {"wall_seconds": 0.0, "tasks": {}}}
    result = {"without_service": {"dag": {"wall_seconds": 379.4, "tasks": {
                  "p.stage": ["success", 55.1], "p.publish": ["success", 99.0], "q.validate": ["skipped", 0]}}},
              "with_service": {"dag": {"wall_seconds": 135.3, "tasks": {
                  "p.stage": ["success", 47.9], "p.publish": ["success", 53.7], "q.validate": ["skipped", 0]}}}}
    assert rows(result) == [("p.publish (success)", 99.0, 53.7), ("p.stage (success)", 55.1, 47.9),
                            ("whole DAG run (wall)", 379.4, 135.3)]
    with pytest.raises(KeyError):
        rows({"without_service": half})  # a result without both halves is not charted
