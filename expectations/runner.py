"""Validate a Delta table against its suite: ``validate_table(cfg, pipeline, kind, table)``.

The table is read as a *batch* DataFrame through ``get_spark`` and handed to a GX 1.x Spark data
source (``data_sources.add_spark`` + dataframe asset + whole-dataframe batch definition). A
checkpoint runs the suite and rebuilds the Data Docs under ``<data_dir>/docs/``. A failed critical
expectation (every committed one is critical) fails the outcome; another severity is only a warning. The
``serving`` kind also checks the serving gap, which needs the last published batch cutoff: the
caller passes its reader (``read_cutoff=spark_jobs.io.batch_runs.published_cutoff``), so this package
never imports the jobs that call it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from expectations import frames
from expectations.context import docs_index, runtime_context
from expectations.data_docs import DocsBuild, build_pages
from expectations.frames import CutoffReader
from expectations.suites import KINDS, suite_name, suite_problem
from infra.spark_session import get_spark
from lakehouse.config import TidewaterConfig
from lakehouse.contracts import MAX_EVENT_AHEAD_SECONDS
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import Pipeline, load_pipeline

DATASOURCE = "tidewater_spark"
IN_MEMORY_DATASOURCE = "tidewater_pandas"
# A frame of at most this many rows is validated in memory (GX's pandas engine, after ``toPandas``): the
# same suite, without one Spark job per metric (2,600 staged windows: 0.2 s instead of 1.3-1.6 s, warm).
IN_MEMORY_MAX_ROWS = 20_000
# Pass/fail first (GX computes no unexpected counts or samples: 2.0 s instead of 3.0-3.7 s for 348,000
# staged windows, warm); only when an expectation fails does the suite run again to say what it observed.
RESULT_FORMATS: tuple[Literal["BOOLEAN_ONLY"], Literal["SUMMARY"]] = ("BOOLEAN_ONLY", "SUMMARY")


@dataclass
class ValidationOutcome:
    """Result of one or more suites on one table: ``success`` is False if any critical expectation failed."""

    pipeline: str
    kind: str
    table: str
    success: bool = True
    evaluated: int = 0
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    docs: str = ""
    seconds: float = 0.0
    docs_build: Any = None  # a ``data_docs.DocsBuild`` still writing the pages (``docs_later``)

    def wait_for_docs(self) -> None:
        """Wait until the Data Docs pages of this outcome are written (a no-op unless ``docs_later``)."""
        if self.docs_build is not None:
            self.docs_build.wait()

    def summary(self) -> str:
        head = (f"{'PASSED' if self.success else 'FAILED'} {self.kind} suite on {self.table}: "
                f"{self.evaluated} expectations, {len(self.failures)} failed, {len(self.warnings)} warnings "
                f"({self.seconds:.1f}s)")
        lines = [head, *(f"  FAILED  {f}" for f in self.failures), *(f"  WARNING {w}" for w in self.warnings)]
        if self.docs:
            lines.append(f"  Data Docs: {self.docs}")
        return "\n".join(lines)


def describe_failure(result: Any) -> str:
    """One line for a failed expectation: type, kwargs and what was observed."""
    cfg = result.expectation_config
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id", "result_format")}
    res = result.result or {}
    observed = {k: res[k] for k in ("observed_value", "unexpected_count", "unexpected_percent",
                                    "partial_unexpected_list") if res.get(k) not in (None, [])}
    if result.exception_info and result.exception_info.get("raised_exception"):
        observed["exception"] = str(result.exception_info.get("exception_message"))[:200]
    return f"{cfg.type} {kwargs} -> {observed}"


def _frames(spark: Any, cfg: TidewaterConfig, p: Pipeline, kind: str, table: str,
            read_cutoff: CutoffReader | None, frame: Any = None) -> list[tuple[str, Any]]:
    if kind == "quarantine":
        return [("quarantine", frames.quarantine_rate_frame(spark, p, table))]
    out = [(kind, frames.table_frame(spark, kind, table, p, frame))]
    if kind == "serving" and read_cutoff is not None:
        out.append(("serving_gap", frames.serving_gap_frame(spark, cfg, p, table, read_cutoff)))
    return out


def validate_table(cfg: TidewaterConfig, pipeline: str | Pipeline, kind: str, table: str,
                   spark: Any = None, build_docs: bool = True,
                   read_cutoff: CutoffReader | None = None,
                   in_memory_max_rows: int = IN_MEMORY_MAX_ROWS, rows: int | None = None,
                   docs_later: bool = False, frame: Any = None) -> ValidationOutcome:
    """Run the ``kind`` suite of ``pipeline`` on ``table`` (a Delta table read as a batch frame).
    ``kind='serving'`` needs ``read_cutoff`` (fails closed without it: the serving gap is never skipped).
    ``rows``: the rows of the table's frame when the caller knows them (a batch run's staged upserts),
    so that choosing the engine costs no count. ``docs_later``: return with the verdict while the Data
    Docs pages are written on a thread of their own (the caller calls ``outcome.wait_for_docs()``).
    ``frame``: the rows being written to ``table`` (a batch run's staged rows, audited while they are
    written: ``spark_jobs.batch.gate``), validated instead of a read of the table."""
    if kind not in KINDS:
        raise TidewaterError(f"check: unknown table kind {kind!r}; use one of {', '.join(KINDS)}")
    if kind == "serving" and read_cutoff is None:
        raise TidewaterError("check: the serving suite needs read_cutoff (spark_jobs.io.batch_runs.published_cutoff) "
                             "for its serving-gap check")
    p = pipeline if isinstance(pipeline, Pipeline) else load_pipeline(pipeline, cfg.pipelines)
    if spark is None:
        spark = get_spark(cfg, f"tidewater-check-{p.name}")
    if not spark.catalog.tableExists(table):
        raise TidewaterError(f"check: table {table} does not exist; run the job that writes it first")
    started = time.monotonic()
    outcome = ValidationOutcome(p.name, kind, table)
    with contextlib.ExitStack() as held:
        context = held.enter_context(runtime_context(cfg))
        results = []
        for suite_kind, df in _frames(spark, cfg, p, kind, table, read_cutoff, frame):
            try:
                known = rows if suite_kind == kind else None
                results.append(_run_suite(context, suite_kind, p, df, outcome, in_memory_max_rows, known))
            finally:  # GX persists the frame it validates and never releases it: in the job service every
                df.unpersist()  # check would leave one more cached copy of a table behind
        if build_docs:
            outcome.docs = str(docs_index(cfg))
            if docs_later:  # the thread holds the context (and its lock) until the pages are written
                outcome.docs_build = DocsBuild(held.pop_all(), context, results)
            else:
                build_pages(context, results)
    outcome.seconds = time.monotonic() - started
    return outcome


def in_memory_if_small(df: Any, max_rows: int, rows: int | None = None) -> tuple[Any, str]:
    """``df`` as a pandas frame when it has at most ``max_rows`` rows, else as it is; and the name of
    the GX data source for it. ``rows``: its known row count; without it, a count that stops early
    (a Spark job: 0.6 s of a 7.9 s gate at 264,000 staged windows on a slow machine)."""
    if rows is None and max_rows > 0:
        rows = df.limit(max_rows + 1).count()
    if max_rows <= 0 or rows is None or rows > max_rows:
        return df, DATASOURCE
    return df.toPandas(), IN_MEMORY_DATASOURCE


def _run_suite(context: Any, suite_kind: str, p: Pipeline, df: Any, outcome: ValidationOutcome,
               in_memory_max_rows: int = IN_MEMORY_MAX_ROWS, rows: int | None = None) -> Any:
    """Run one suite on ``df`` into ``outcome``; returns the last checkpoint result (its Data Docs are
    built by the caller: ``data_docs``). A missing or stale committed suite fails closed (``suite_problem``)."""
    import great_expectations as gx

    problem = suite_problem(suite_kind, p)
    if problem:
        raise TidewaterError(problem)
    name = suite_name(suite_kind, p.name)
    suite = context.suites.get(name)
    df, source_name = in_memory_if_small(df, in_memory_max_rows, rows)
    try:
        source = context.data_sources.get(source_name)
    except (KeyError, ValueError):
        add = context.data_sources.add_pandas if source_name == IN_MEMORY_DATASOURCE else context.data_sources.add_spark
        source = add(name=source_name)
    try:
        asset = source.get_asset(name)
    except LookupError:
        asset = source.add_dataframe_asset(name=name)
    try:
        batch_def = asset.get_batch_definition(name)
    except (KeyError, ValueError, LookupError):
        batch_def = asset.add_batch_definition_whole_dataframe(name)
    # one validation definition (and checkpoint) per engine: a stored definition names its data source,
    # and a context that has not added that source cannot load it
    check = name if source_name == DATASOURCE else f"{name}.in_memory"
    validation = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=check, data=batch_def, suite=suite))
    parameters = {"max_event_ms": int((time.time() + MAX_EVENT_AHEAD_SECONDS) * 1000)}
    result: Any = None
    for result_format in RESULT_FORMATS:
        checkpoint = context.checkpoints.add_or_update(gx.Checkpoint(
            name=f"check.{check}", validation_definitions=[validation], actions=[], result_format=result_format))
        result = checkpoint.run(batch_parameters={"dataframe": df}, expectation_parameters=parameters)
        if all(res.success for run in result.run_results.values() for res in run.results):
            break
    for run in result.run_results.values():
        tally(outcome, suite_kind, run.results)
    return result


def tally(outcome: ValidationOutcome, suite_kind: str, results: Iterable[Any]) -> None:
    """Count GX expectation results into ``outcome``: a failed critical one fails it, any other is a warning."""
    for res in results:
        outcome.evaluated += 1
        if res.success:
            continue
        line = f"[{suite_kind}] {describe_failure(res)}"
        severity = getattr(res.expectation_config, "severity", "critical")
        if str(getattr(severity, "value", severity)) == "critical":
            outcome.failures.append(line)
            outcome.success = False
        else:
            outcome.warnings.append(line)
