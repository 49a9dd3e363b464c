"""Provision Superset for Tidewater; run by ``infra/services/superset.py`` with ``.venv-bi/bin/python``.

One process (each Superset app start costs 10-30 s on 2 cores), in one app context:
1. the metadata DB migrated (``superset db upgrade``) and roles/permissions synced (``superset init``),
   both skipped when the DB is already at this Superset version (a marker beside it);
2. the ``admin`` user (role Admin) with the password from the 0600 secrets file
   (``$TIDEWATER_SUPERSET_SECRETS``): created, or its password set to the file's value;
3. the database connection, datasets, charts and dashboard from ``bundle.py``: imported with
   ``overwrite=True`` by fixed UUIDs, so running this again updates rather than duplicates. The
   connection logs in to the Thrift server as its read-only BI user ``analyst``, with the password from
   ``<data_dir>/secrets/thrift_analyst.password`` (``infra.services.thrift_access``, the same folder as
   ``$TIDEWATER_SUPERSET_SECRETS``); Superset keeps it encrypted with its ``SECRET_KEY``.
The passwords are read here from their files: they never appear on a command line.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import time
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flask import Flask  # in .venv-bi only: Any to the main venv's mypy

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))  # the repository: infra.services.thrift_access

import bundle  # noqa: E402  (sibling module; this file runs as a script)

from infra.services import thrift_access  # noqa: E402  (stdlib, PyYAML and pyhive only)

STARTED = time.monotonic()


def say(what: str) -> None:
    print(f"provision: {what} ({time.monotonic() - STARTED:.1f}s)", flush=True)


def migrate(app_version: str) -> None:
    from flask_migrate import upgrade
    from superset import appbuilder, security_manager

    marker = Path(os.environ["SUPERSET_HOME"]) / "superset.db.version"
    if marker.exists() and marker.read_text() == app_version:
        return
    upgrade()
    for logger in logging.root.manager.loggerDict.values():  # alembic's fileConfig disabled them: the
        if isinstance(logger, logging.Logger):  # server's own log would lose every request and query
            logger.disabled = False
    say("metadata DB migrated")
    appbuilder.add_permissions(update_perms=True)
    security_manager.sync_role_definitions()
    say("roles and permissions synced")
    marker.write_text(app_version)


def admin_user(name: str, password: str) -> object:
    from superset import security_manager

    user = security_manager.find_user(username=name)
    if user is None:
        user = security_manager.add_user(name, "Tidewater", "Admin", f"{name}@localhost",
                                          security_manager.find_role("Admin"), password=password)
        if not user:
            raise SystemExit("provision: could not create the admin user")
        say(f"created user {name}")
    else:  # the secrets file (or TIDEWATER_BI_PASSWORD) is the source of truth
        security_manager.reset_password(user.id, password)
    return user


def provision(app: Flask) -> None:
    """Everything above, inside ``app`` (the server's own app: see wsgi.py)."""
    from flask import g

    say("app loaded")
    with app.app_context():
        from superset import db
        from superset.commands.dashboard.importers.dispatcher import ImportDashboardsCommand
        from superset.commands.importers.v1.utils import get_contents_from_bundle

        migrate(version("apache-superset"))
        with open(os.environ["TIDEWATER_SUPERSET_SECRETS"], encoding="utf-8") as fh:
            password = json.load(fh)["admin_password"]
        g.user = admin_user(os.environ.get("TIDEWATER_SUPERSET_USER", "admin"), password)
        db.session.commit()
        secrets = Path(os.environ["TIDEWATER_SUPERSET_SECRETS"]).parent
        uri = thrift_access.logged_in(os.environ["TIDEWATER_SUPERSET_URI"], secrets)
        with zipfile.ZipFile(io.BytesIO(bundle.zip_bytes(uri))) as zf:
            contents = get_contents_from_bundle(zf)
        ImportDashboardsCommand(contents, overwrite=True).run()
        db.session.commit()
        say(f"imported {len(bundle.DATASETS)} datasets, {len(bundle.CHARTS)} charts, dashboard '{bundle.SLUG}'")


def main() -> int:
    from superset.app import create_app

    provision(create_app())
    return 0


if __name__ == "__main__":
    sys.exit(main())
