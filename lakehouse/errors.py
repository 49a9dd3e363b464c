"""Errors that Tidewater reports to users as one clear line (the CLI prints them, exit 2, or the class's
``EXIT_CODE``: ``NothingToDo`` 3, ``TopicMissing`` 4)."""

from __future__ import annotations

from typing import Any


class TidewaterError(Exception):
    """A problem the user can fix; ``str()`` is the whole message, naming problem and fix."""

    EXIT_CODE = 2


class NothingToDo(TidewaterError):
    """Nothing to do yet (e.g. a batch run over an empty bronze table): not a failure. The CLI exits
    with ``EXIT_CODE`` so that callers (Airflow tasks) decide on the exit status, not on the text."""

    EXIT_CODE = 3


class TopicMissing(TidewaterError):
    """A pipeline's Kafka topic does not exist: its speed job would idle with lag 0 and look healthy.
    ``speed start`` refuses and ``speed status`` reports it with this exit code (the supervisor DAG
    decides on the code, not the text)."""

    EXIT_CODE = 4

    def __init__(self, pipeline: str, topic: str, bootstrap: str) -> None:
        self.pipeline, self.topic = pipeline, topic
        super().__init__(f"topic '{topic}' of {pipeline} does not exist at {bootstrap}; create it with "
                         f"'tidewater up' or 'tidewater produce {pipeline}', or fix 'topic:' in "
                         f"lakehouse/pipelines/{pipeline}.yml")


class ConfigError(TidewaterError):
    """A configuration key holds a value of the wrong form."""

    def __init__(self, key: str, value: Any, expected: str, source: str = "") -> None:
        self.key, self.value, self.expected, self.source = key, value, expected, source
        origin = f" (from {source})" if source else ""
        super().__init__(f"config error: '{key}' is {value!r}{origin}; expected {expected}")


class PipelineDefinitionError(TidewaterError):
    """A pipeline YAML definition is invalid; ``source`` names the file it was read from, when it was."""

    def __init__(self, pipeline: str, field: str, problem: str, source: str = "") -> None:
        self.pipeline, self.field, self.problem, self.source = pipeline, field, problem, source
        origin = f" ({source})" if source else ""
        where = f": field '{field}' " if field else " "  # no field: the pipeline's name itself
        super().__init__(f"pipeline '{pipeline}'{origin}{where}{problem}")


class YamlSyntaxError(TidewaterError):
    """A YAML file (tidewater.yml, a pipeline definition) that does not parse: ``where`` is the line and
    column of the error, as 'line L, column C'."""

    def __init__(self, path: str, where: str, problem: str) -> None:
        self.path, self.where = path, where
        at = f" at {where}" if where else ""
        super().__init__(f"{path} is not valid YAML{at}: {problem}; fix the YAML syntax there (close every bracket "
                         "and quote, indent with spaces, each key of a mapping alike, quote a value that holds ': ' or ' #')")


class ServiceError(TidewaterError):
    """A local service (Kafka, metastore, Thrift, Airflow) could not start or is unhealthy."""
