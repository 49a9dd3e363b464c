"""The serving cache's pure parts: which Delta tables a view reads, their newest commit from the log
folder, the uncached form of a view's SELECT and the freshness test ``wait_fresh`` relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse.pipeline import load_pipeline
from spark_jobs.serving.cache import delta_locations, is_fresh, latest_version, local_path, text_sha1
from spark_jobs.serving.memory import redirect_name, uncached_variant
from spark_jobs.shared.serving_view import view_sql

pytestmark = pytest.mark.unit


def _view_text() -> str:
    return view_sql(load_pipeline("sensor_readings"), "lambda", 2, None, lambda t: f"delta.`file:/w/{t}`")


def test_delta_locations_of_a_serving_view() -> None:
    assert delta_locations(_view_text()) == ["file:/w/batch.sensor_readings",
                                             "file:/w/speed.sensor_readings__v2__partials"]
    assert delta_locations("SELECT 1 FROM delta.`/a``b`") == ["/a`b"]  # backquotes doubled in SQL
    assert local_path("file:/w/x") == Path("/w/x") and local_path("file:///w/x") == Path("/w/x")


def test_uncached_variant_wraps_every_table_and_keeps_the_rest() -> None:
    text = _view_text()
    variant = uncached_variant(text)
    for location in delta_locations(text):
        assert f"(SELECT * FROM delta.`{location}` WHERE true)" in variant
    assert variant.replace(" WHERE true)", "").replace("(SELECT * FROM ", "") == text


def _commit(log: Path, version: int) -> None:
    (log / f"{version:020d}.json").write_text("{}")


def test_latest_version_probes_forward_and_relists_a_replaced_table(tmp_path: Path) -> None:
    assert latest_version(tmp_path / "missing") == -1
    log = tmp_path / "_delta_log"
    log.mkdir()
    for v in range(3):
        _commit(log, v)
    (log / "00000000000000000002.checkpoint.parquet").write_text("")
    (log / "00000000000000000003.json.tmp").write_text("")
    assert latest_version(tmp_path) == 2
    _commit(log, 3)
    assert latest_version(tmp_path, known=2) == 3
    for f in log.iterdir():
        f.unlink()
    _commit(log, 0)  # the table was replaced: version 3 is gone
    assert latest_version(tmp_path, known=3) == 0


def test_is_fresh_needs_the_same_text_and_at_least_the_versions() -> None:
    text = _view_text()
    state = {"views": {"serving.p": {"cached": True, "text_sha1": text_sha1(text), "versions": {"a": 5, "b": 7}}}}
    assert is_fresh(state, "serving.p", text, {"a": 5, "b": 7})
    assert not is_fresh(state, "serving.p", text, {"a": 5, "b": 8})  # a commit the cache has not taken in
    assert is_fresh(state, "serving.p", text + "\n", {"a": 5})  # trailing whitespace is not a new text
    assert not is_fresh(state, "serving.p", text.replace("1970", "2026"), {"a": 5, "b": 7})  # a publish's new cutoff
    assert is_fresh({"views": {"serving.p": {"cached": False}}}, "serving.p", text, {"a": 9})  # reads go to the tables
    assert is_fresh({}, "serving.p", text, {"a": 9})


def test_redirect_name_is_the_one_the_thrift_servers_parser_looks_up() -> None:
    java = (Path(__file__).resolve().parents[2] / "infra/java/io/tidewater/spark/ServingParser.java").read_text()
    assert f'PREFIX = "{redirect_name("serving.x")[:-1]}"' in java
    assert redirect_name("serving.Sensor_Readings") == "tidewater_serving__sensor_readings"
