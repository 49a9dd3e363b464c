"""``make bi``'s pieces without services: the ``bi`` config section and the dashboard bundle."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
import yaml

from infra.superset import bundle
from lakehouse.config import load_config
from lakehouse.errors import ConfigError

pytestmark = pytest.mark.unit


def test_bi_is_off_by_default_and_loopback(tmp_path: Path) -> None:
    (tmp_path / "empty.yml").write_text("{}\n")
    cfg = load_config(tmp_path / "empty.yml", env={})
    assert (cfg.bi.enabled, cfg.bi.host, cfg.bi.port) == (False, "127.0.0.1", 8088)
    on = load_config(tmp_path / "empty.yml", env={"TIDEWATER_BI_ENABLED": "true", "TIDEWATER_BI_PORT": "9001"})
    assert (on.bi.enabled, on.bi.port) == (True, 9001)


@pytest.mark.parametrize("text, message", [
    ("bi: {enabled: maybe}", "'bi.enabled' is 'maybe'; expected true or false"),
    ("bi: {host: 0.0.0.0}", "'bi.host' is '0.0.0.0'; expected a loopback address"),
    ("bi: {port: 70000}", "'bi.port' is 70000; expected a TCP port"),
    ("bi: {colour: blue}", "'bi.colour'"),
])
def test_bad_bi_values_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tw.yml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bundle_is_consistent_and_stable() -> None:
    uri = "hive://superset@127.0.0.1:10000/default?auth=NOSASL"
    data = bundle.zip_bytes(uri)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        docs = {name: yaml.safe_load(zf.read(name)) for name in zf.namelist()}
    uuids = [d["uuid"] for d in docs.values() if "uuid" in d]
    assert len(uuids) == len(set(uuids)) == 1 + len(bundle.DATASETS) + len(bundle.CHARTS) + 1
    datasets = {d["uuid"] for n, d in docs.items() if "/datasets/" in n}
    charts = {d["uuid"] for n, d in docs.items() if "/charts/" in n}
    assert all(d["dataset_uuid"] in datasets for n, d in docs.items() if "/charts/" in n)
    [dashboard] = [d for n, d in docs.items() if "/dashboards/" in n]
    placed = {v["meta"]["uuid"] for v in dashboard["position"].values() if isinstance(v, dict) and v.get("type") == "CHART"}
    assert placed == charts
    assert docs["bundle/databases/tidewater.yaml"]["sqlalchemy_uri"] == uri
    assert bundle.files(uri) == {n: d for n, d in docs.items()}  # same UUIDs every run: import updates in place
    for name, d in docs.items():
        if "/datasets/" in name:
            assert d["sql"].startswith("SELECT ") and d["main_dttm_col"] in {c["column_name"] for c in d["columns"]}
