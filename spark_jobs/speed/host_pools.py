"""The speed host's FAIR scheduler pools: ``infra/fairscheduler.xml`` plus one pool per declared pipeline.

Spark gives a pool that its allocation file does not name weight 1, which is the weight of the
``background`` pool (a stream's compactions and progress appends): a pipeline's micro-batches would
share the cores equally with that work, which in a job of its own yields to them. The host therefore
starts with a copy of the file that adds a pool per declared pipeline with the ``default`` pool's
weight and scheduling mode, and no minimum share: the pipelines share the cores equally among
themselves, and the background work takes what they leave. A pipeline declared after the host started
gets Spark's default pool settings until the host restarts.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from infra.spark_session import FAIR_POOLS


def pools_xml(pipelines: list[str], base: Path = FAIR_POOLS) -> str:
    """``base``'s pools, then one per pipeline like its ``default`` pool with a minimum share of 0."""
    root = ET.parse(base).getroot()
    default = root.find("pool[@name='default']")
    if default is None:
        raise ValueError(f"host_pools: {base} has no 'default' pool to copy")
    known = {pool.get("name") for pool in root.findall("pool")}
    for name in pipelines:
        if name in known:
            continue
        pool = ET.SubElement(root, "pool", name=name)
        for key in ("schedulingMode", "weight"):
            ET.SubElement(pool, key).text = default.findtext(key)
        ET.SubElement(pool, "minShare").text = "0"
    return ET.tostring(root, encoding="unicode")


def write_pools(folder: Path, pipelines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fairscheduler.xml"
    path.write_text(pools_xml(pipelines))
    return path
