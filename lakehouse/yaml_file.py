"""Reading Tidewater's YAML files (``tidewater.yml``, ``lakehouse/pipelines/<name>.yml``): a file that does
not parse raises one :class:`YamlSyntaxError` naming the file, the line and column, and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lakehouse.errors import YamlSyntaxError


def read_yaml(path: Path, shown: str = "") -> Any:
    """The parsed content of ``path`` (``shown``: how the error names the file; default the path)."""
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(shown or str(path), _where(getattr(exc, "problem_mark", None)), _problem(exc)) from None


def _where(mark: Any) -> str:
    """'line L, column C' of a PyYAML mark (0-based inside), or '' without one."""
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _problem(exc: yaml.YAMLError) -> str:
    """PyYAML's problem in one line, with the construct it was reading when that started elsewhere."""
    problem = getattr(exc, "problem", None)
    if not problem:
        return " ".join(str(exc).split())
    context, started = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    mark = getattr(exc, "problem_mark", None)
    if context and started is not None and (mark is None or (started.line, started.column) != (mark.line, mark.column)):
        problem = f"{problem} ({context} that starts at {_where(started)})"
    return " ".join(str(problem).split())
