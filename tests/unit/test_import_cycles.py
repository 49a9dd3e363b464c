"""The no-cycles rule of ``make lint`` (tests/import_cycles.py): the rule on small graphs, then the project."""

from __future__ import annotations

import pytest

from tests.import_cycles import cycles, project_imports

pytestmark = pytest.mark.unit


def test_cycles_are_the_strongly_connected_groups() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"f"}}) == [
        ["a", "b", "c"], ["d", "e"]]


def test_the_project_has_no_import_cycle() -> None:
    assert cycles(project_imports()) == []
