"""A batch run's Data Docs pages are a report of a verdict already acted on (``batch.wap.wait_for_report``)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


class Pages:
    def __init__(self, error: Exception | None) -> None:
        self.error, self.waited = error, False

    def wait_for_docs(self) -> None:
        self.waited = True
        if self.error is not None:
            raise self.error


def test_pages_that_fail_leave_one_line_and_no_error(capsys: pytest.CaptureFixture[str]) -> None:
    from spark_jobs.batch.wap import wait_for_report

    pages = Pages(OSError("disk full"))
    wait_for_report(pages)
    err = capsys.readouterr().err
    assert pages.waited and err.count("\n") == 1
    assert "Data Docs pages were not written (OSError: disk full)" in err


def test_pages_written_say_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from spark_jobs.batch.wap import wait_for_report

    pages = Pages(None)
    wait_for_report(pages)
    assert pages.waited and capsys.readouterr().err == ""
