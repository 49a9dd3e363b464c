"""Data Docs pages for checkpoint results, built now or on a thread of their own after the verdict.

A checkpoint's ``UpdateDataDocsAction`` renders the pages before ``checkpoint.run`` returns, so the
caller waits for HTML before it learns whether the table passed (0.6-0.7 s of a 4 s gate at 264,000
staged windows, mostly jinja compiling its templates again). The runner runs its checkpoints without
actions and builds the same pages here: the result's page, its suite's page and the index, in one
``build_data_docs`` call. ``DocsBuild`` does it beside the caller's next step (a batch run's publish)
and holds the GX context, with its lock, until the pages are written.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any


def build_pages(context: Any, results: list[Any]) -> None:
    """The Data Docs pages of ``results`` (checkpoint results) and the site's index."""
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

    identifiers: list[Any] = []
    for result in results:
        for result_id, run in result.run_results.items():
            identifiers += [result_id, ExpectationSuiteIdentifier(name=run.suite_name)]
    if identifiers:
        context.build_data_docs(resource_identifiers=identifiers, build_index=True)


class DocsBuild:
    """``build_pages`` on a thread of its own; then closes ``held`` (the GX context and its lock).
    ``wait`` joins it and re-raises its error."""

    def __init__(self, held: contextlib.ExitStack, context: Any, results: list[Any]) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(held, context, results), daemon=True,
                                       name="tidewater-data-docs")
        self.thread.start()

    def _run(self, held: contextlib.ExitStack, context: Any, results: list[Any]) -> None:
        with held:
            try:
                build_pages(context, results)
            except BaseException as exc:  # handed to the waiting thread
                self.error = exc

    def wait(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error
