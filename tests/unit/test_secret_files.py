"""``infra.secret_files.create_once``: 0600 in a 0700 folder, one value when creators race."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from infra.secret_files import create_once

pytestmark = pytest.mark.unit


def test_created_private_once_and_racing_creators_agree(tmp_path: Path) -> None:
    path = tmp_path / "secrets" / "token"
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: create_once(path, lambda: f"value-{i}"), range(32)))
    value = path.read_text()
    assert value.startswith("value-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["token"]  # no temp files left behind
    create_once(path, lambda: "other")
    assert path.read_text() == value  # never overwritten
