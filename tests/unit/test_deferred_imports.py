"""Imports at module top (tests/in_function_imports.py, infra/deferred_imports.py): the rule on sample
sources, the project against it, and what a fresh interpreter loads when it imports the CLI, the DAG files
and every module of the project."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.deferred_imports import DEFERRED, PACKAGES
from tests.in_function_imports import REPO, checked_files, find, imported_packages, in_function_imports, violations

pytestmark = pytest.mark.unit

# modules that run in another virtualenv (Superset's), importing what only that one holds at their top
OTHER_ENVIRONMENT = frozenset({"infra.superset.wsgi", "infra.superset.superset_config"})
SAMPLE = '''
from typing import TYPE_CHECKING
import json
if TYPE_CHECKING:
    from pyspark.sql import DataFrame

def read(path):
    import os
    from pyspark.sql import functions as F
    from . import naming

    def inner():
        import kafka.errors
        from lakehouse.naming import table
    return lambda: __import__("x")

class Job:
    import re

    def run(self):
        import great_expectations as gx
        from delta.tables import DeltaTable
'''


def _loaded_in_fresh_interpreter(code: str, tmp_path: Path) -> dict[str, list[str]]:
    """Run ``code`` (which sets ``out``: a dict of lists) in a fresh interpreter at the repository root."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "AIRFLOW_HOME": str(tmp_path / "airflow_home"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    program = f"import json, sys\n{code}\nprint(json.dumps(out))\n"
    proc = subprocess.run([sys.executable, "-c", program], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, list[str]] = json.loads(proc.stdout.splitlines()[-1])
    return result


def _project_modules() -> list[str]:
    names = [name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
             for name in checked_files()]
    return sorted(set(names) - OTHER_ENVIRONMENT)


LISTED_LOADED = f"sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(PACKAGES)!r}))"


def test_only_in_function_imports_of_unlisted_packages_are_reported() -> None:
    tree = ast.parse(SAMPLE)
    assert [node.lineno for node in in_function_imports(tree)] == [8, 9, 10, 13, 14, 21, 22]
    assert [sorted(imported_packages(node)) for node in in_function_imports(tree)] == [
        ["os"], ["pyspark"], ["."], ["kafka"], ["lakehouse"], ["great_expectations"], ["delta"]]
    assert violations(SAMPLE) == [(8, "import os"), (10, "from . import naming"),
                                  (14, "from lakehouse.naming import table")]
    assert violations(SAMPLE, allowed=frozenset()) == [
        (8, "import os"), (9, "from pyspark.sql import functions as F"), (10, "from . import naming"),
        (13, "import kafka.errors"), (14, "from lakehouse.naming import table"),
        (21, "import great_expectations as gx"), (22, "from delta.tables import DeltaTable")]


def test_the_project_imports_inside_functions_only_listed_packages() -> None:
    assert find() == []


def test_each_listed_package_is_imported_inside_a_function_and_installed_as_listed() -> None:
    used = set()
    for name in checked_files():
        for node in in_function_imports(ast.parse((REPO / name).read_text(encoding="utf-8"))):
            used |= imported_packages(node)
    assert sorted(PACKAGES - used) == [], "listed but never imported inside a function: drop it from the list"
    for entry in DEFERRED:  # a figure for each installed package, none for one that lives elsewhere
        installed = importlib.util.find_spec(entry.package) is not None
        assert installed == (entry.seconds is not None), entry


def test_the_cli_and_its_commands_load_no_listed_package(tmp_path: Path) -> None:
    out = _loaded_in_fresh_interpreter(
        "from tidewater.cli import build_parser\nbuild_parser()\n"
        "from tidewater.commands import speed\n"
        f"out = {{'listed': {LISTED_LOADED}, 'commands': sorted(m for m in sys.modules if m.startswith("
        "'tidewater.commands.'))}", tmp_path)
    assert out["listed"] == []
    assert "tidewater.commands.speed" in out["commands"] and "tidewater.commands.quality" in out["commands"]


def test_the_dag_files_load_no_listed_package_beyond_airflow(tmp_path: Path) -> None:
    dag_modules = [m for m in _project_modules() if m.startswith("dags.")]
    out = _loaded_in_fresh_interpreter(
        "import importlib\nimport airflow.sdk\n"
        f"before = set({LISTED_LOADED})\n"
        f"for name in {dag_modules!r}:\n    importlib.import_module(name)\n"
        f"out = {{'new': sorted(set({LISTED_LOADED}) - before), 'dags': sorted(m for m in sys.modules "
        "if m.startswith('dags.'))}", tmp_path)
    assert out["new"] == []
    assert out["dags"] == dag_modules and len(dag_modules) >= 6


def test_every_module_imports_in_a_fresh_interpreter_without_a_listed_package(tmp_path: Path) -> None:
    modules = [m for m in _project_modules() if not m.startswith("dags.")]
    out = _loaded_in_fresh_interpreter(
        f"import importlib\nfor name in {modules!r}:\n    importlib.import_module(name)\n"
        f"out = {{'listed': {LISTED_LOADED}, 'loaded': sorted(set({modules!r}) & set(sys.modules))}}", tmp_path)
    assert out["listed"] == []
    assert out["loaded"] == modules and len(modules) > 150
