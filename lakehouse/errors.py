"""Errors that Tidewater reports to users as one clear line (the CLI prints them, exit 2; ``NothingToDo`` 3)."""

from __future__ import annotations

from typing import Any


class TidewaterError(Exception):
    """A problem the user can fix; ``str()`` is the whole message, naming problem and fix."""


class NothingToDo(TidewaterError):
    """Nothing to do yet (e.g. a batch run over an empty bronze table): not a failure. The CLI exits
    with ``EXIT_CODE`` so that callers (Airflow tasks) decide on the exit status, not on the text."""

    EXIT_CODE = 3


class ConfigError(TidewaterError):
    """A configuration key holds a value of the wrong form."""

    def __init__(self, key: str, value: Any, expected: str) -> None:
        self.key, self.value, self.expected = key, value, expected
        super().__init__(f"config error: '{key}' is {value!r}; expected {expected}")


class PipelineDefinitionError(TidewaterError):
    """A pipeline YAML definition is invalid."""

    def __init__(self, pipeline: str, field: str, problem: str) -> None:
        self.pipeline, self.field = pipeline, field
        super().__init__(f"pipeline '{pipeline}': field '{field}' {problem}")


class ServiceError(TidewaterError):
    """A local service (Kafka, metastore, Thrift, Airflow) could not start or is unhealthy."""
