"""Two ``make`` commands started at the same time on a fresh clone (``make demo`` and ``make test``) install
the virtualenv in turn. Before the lock, the second one found ``.venv/bin/python`` of a venv still being
created, then failed on its missing ``pip`` ("No such file or directory", exit 2), and two installers could
write one venv at once. The real Makefile runs here with real ``make``, ``venv``, ``pip`` and ``uv``, on a
project of one module in a temp folder (the import check set to that module), so each make takes seconds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "tw-install-probe"
version = "0.0.1"

[project.optional-dependencies]
dev = []

[tool.setuptools]
py-modules = ["tw_install_probe"]
"""


def _project(folder: Path) -> None:
    shutil.copy(REPO / "Makefile", folder / "Makefile")
    (folder / "pyproject.toml").write_text(PROJECT)
    (folder / "constraints.txt").write_text("")
    (folder / "tw_install_probe.py").write_text("ANSWER = 42\n")


def _make(folder: Path) -> subprocess.Popen[str]:
    python = shutil.which("python3") or sys.executable
    return subprocess.Popen(["make", "--no-print-directory", f"PY={python}", "VENV_IMPORTS=import tw_install_probe",
                             ".venv/.tidewater-installed"], cwd=folder, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_two_makes_started_together_install_the_venv_once(tmp_path: Path) -> None:
    _project(tmp_path)
    first, second = _make(tmp_path), _make(tmp_path)
    outputs = [proc.communicate(timeout=500)[0] for proc in (first, second)]
    for proc, out in zip((first, second), outputs, strict=True):
        assert proc.returncode == 0, out
    assert sum(out.count("creating .venv") for out in outputs) == 1, outputs  # the second found it done
    probe = subprocess.run([str(tmp_path / ".venv/bin/python"), "-c", "import tw_install_probe as m; print(m.ANSWER)"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "42"


def test_a_venv_left_without_pip_is_completed(tmp_path: Path) -> None:
    """An install killed while ``python -m venv`` ran leaves ``bin/python`` without ``bin/pip``: the next make
    completes that venv instead of failing on the missing pip."""
    _project(tmp_path)
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True)
    proc = _make(tmp_path)
    out = proc.communicate(timeout=500)[0]
    assert proc.returncode == 0, out
    assert (tmp_path / ".venv/bin/pip").exists() and (tmp_path / ".venv/.tidewater-installed").exists()
