"""``contracts.ensure`` (its ``create_racing`` step) when another process creates the same table at the same moment: the speed jobs
of all pipelines share the ``ops`` tables and may start at once (found by tests/integration/
test_random_streams.py: one of three jobs started together died on ``ops.stream_progress``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import pytest

from lakehouse import contracts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.unit


class RacingSpark:
    """Fails the first ``failures`` statements with ``error``, as Spark does while another CREATE runs."""

    def __init__(self, failures: int, error: str) -> None:
        self.failures, self.error = failures, error
        self.statements: list[str] = []

    def sql(self, text: str) -> None:
        self.statements.append(text)
        if len(self.statements) <= self.failures:
            raise RuntimeError(self.error)

    def session(self) -> SparkSession:
        """This stand-in where a SparkSession is expected (``create_racing`` only calls ``sql``)."""
        return cast("SparkSession", self)


def test_a_create_that_loses_the_race_is_retried() -> None:
    spark = RacingSpark(2, "[DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION] Cannot create table ('`ops`.`stream_progress`')")
    contracts.create_racing(spark.session(), contracts.STREAM_PROGRESS.ddl())
    assert len(spark.statements) == 3 and spark.statements[-1] == contracts.STREAM_PROGRESS.ddl()


def test_other_errors_are_not_retried() -> None:
    spark = RacingSpark(1, "[PARSE_SYNTAX_ERROR] Syntax error")
    with pytest.raises(RuntimeError, match="PARSE_SYNTAX_ERROR"):
        contracts.create_racing(spark.session(), contracts.STREAM_PROGRESS.ddl())
    assert len(spark.statements) == 1
