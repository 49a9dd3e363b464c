"""Superset settings for Tidewater (``SUPERSET_CONFIG_PATH``; see infra/services/superset.py).

Paths and secrets come from the environment the service module sets: the metadata DB is SQLite
under ``$SUPERSET_HOME``; ``SECRET_KEY`` is read from the 0600 secrets file, never from the repo.
"""

import json
import os

_HOME = os.environ["SUPERSET_HOME"]
with open(os.environ["TIDEWATER_SUPERSET_SECRETS"], encoding="utf-8") as _fh:
    SECRET_KEY = json.load(_fh)["secret_key"]

SQLALCHEMY_DATABASE_URI = f"sqlite:///{os.path.join(_HOME, 'superset.db')}?check_same_thread=false"
DATA_DIR = _HOME
# Spark on 2 cores: a cold chart query can take tens of seconds
SUPERSET_WEBSERVER_TIMEOUT = 300
SQLLAB_TIMEOUT = 300
SQLLAB_ASYNC_TIME_LIMIT_SEC = 300
# a local tool: no telemetry, no example data, no thumbnails/alerts workers
SCARF_ANALYTICS = False
FEATURE_FLAGS = {"THUMBNAILS": False, "ALERT_REPORTS": False}
WTF_CSRF_ENABLED = True
# anonymous visitors get no permissions: the Public role is left empty (every API answers them 401)
PUBLIC_ROLE_LIKE = None
