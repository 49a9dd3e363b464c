"""The no-cycles rule of ``make lint`` (tests/import_cycles.py): the rule on small graphs, then the project."""

from __future__ import annotations

from pathlib import Path

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


def test_an_import_inside_a_function_or_under_type_checking_closes_a_cycle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "cycle_sample"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "top.py").write_text("from cycle_sample import inner, typed\n")
    (package / "inner.py").write_text("def f():\n    from cycle_sample import top\n    return top\n")
    (package / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import cycle_sample.top\n")
    (package / "alone.py").write_text("import json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cycles(project_imports(("cycle_sample",), cache=False)) == [
        ["cycle_sample.inner", "cycle_sample.top", "cycle_sample.typed"]]
