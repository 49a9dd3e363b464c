"""The Great Expectations file contexts.

* ``expectations/gx/`` (in the repo, versioned): ``great_expectations.yml`` and one JSON file per
  suite (``expectations/gx/expectations/<kind>/<pipeline>.json``). Regenerated with
  ``python -m expectations.suites``; what is committed is what every validation runs.
* ``<data_dir>/gx/`` (runtime copy): the versioned config and suites are copied there before each
  validation, so validation results and Data Docs never write into the repo. Data Docs HTML is
  built into ``<data_dir>/docs/``. A file lock serialises concurrent validations (Airflow tasks).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lakehouse import naming
from lakehouse.config import TidewaterConfig

REPO_CONTEXT_ROOT = Path(__file__).resolve().parent
SITE_NAME = "tidewater_docs"


def repo_context() -> Any:
    """The versioned file context in the repo (used to (re)write suites)."""
    import great_expectations as gx

    return gx.get_context(mode="file", project_root_dir=str(REPO_CONTEXT_ROOT))


def docs_dir(cfg: TidewaterConfig) -> Path:
    return cfg.data_dir / "docs"


def docs_index(cfg: TidewaterConfig) -> Path:
    return docs_dir(cfg) / "index.html"


@contextlib.contextmanager
def runtime_context(cfg: TidewaterConfig) -> Iterator[Any]:
    """A file context under ``<data_dir>/gx`` holding the repo's suites; exclusive while open."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx

    root = cfg.data_dir / "gx_context"
    lock_path = naming.run_dir(cfg) / "gx.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _sync_suites(root / "gx")
        context = gx.get_context(mode="file", project_root_dir=str(root))
        site: Any = {
            "class_name": "SiteBuilder",
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir(cfg))},
        }
        sites = context.get_site_names()
        for name in sites:
            if name != SITE_NAME:
                context.delete_data_docs_site(name)
        if SITE_NAME in sites:
            context.update_data_docs_site(SITE_NAME, site)
        else:
            context.add_data_docs_site(SITE_NAME, site)
        yield context


def _sync_suites(target: Path) -> None:
    """Copy the versioned config and suites into the runtime context folder (overwriting)."""
    source = REPO_CONTEXT_ROOT / "gx"
    (target / "expectations").mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "great_expectations.yml", target / "great_expectations.yml")
    shutil.copytree(source / "expectations", target / "expectations", dirs_exist_ok=True)
