"""A pipeline's table names: ``Pipeline.tables`` holds, for every layer it names, what ``naming.table`` gives."""

from __future__ import annotations

from dataclasses import fields

import pytest

from lakehouse import naming
from lakehouse.pipeline import available_pipelines, load_pipeline


@pytest.mark.parametrize("name", sorted(available_pipelines()))
def test_each_shipped_pipeline_reads_its_names_from_its_definition(name: str) -> None:
    p = load_pipeline(name)
    names = {f.name: getattr(p.tables, f.name) for f in fields(naming.Tables)}
    assert names == {layer: f"{layer}.{name}" for layer in ("bronze", "quarantine", "late", "alerts", "batch", "serving")}
    assert all(names[layer] == naming.table(layer, name) for layer in names)


def test_an_unknown_layer_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown layer"):
        naming.table("gold", "sensor_readings")
