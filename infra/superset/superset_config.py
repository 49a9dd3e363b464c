"""Superset settings for Tidewater (``SUPERSET_CONFIG_PATH``; see infra/services/superset.py).

Paths and secrets come from the environment the service module sets: the metadata DB is SQLite
under ``$SUPERSET_HOME``; ``SECRET_KEY`` is read from the 0600 secrets file, never from the repo.
"""

import hashlib
import hmac
import json
import os
import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[2]))  # the repository: infra.services.thrift_tls
from infra.services.thrift_tls import tls_transport  # noqa: E402

_HOME = os.environ["SUPERSET_HOME"]
# the Thrift server's certificate when it speaks TLS (thrift.tls; set by infra/services/superset.py)
_THRIFT_CA = os.environ.get("TIDEWATER_THRIFT_TLS_CA")
with open(os.environ["TIDEWATER_SUPERSET_SECRETS"], encoding="utf-8") as _fh:
    SECRET_KEY = json.load(_fh)["secret_key"]
# Superset's other signing secrets default to published strings. Their features are off (no embedded
# dashboards, no async queries); derived from SECRET_KEY, they stay secret if a feature is turned on later
GUEST_TOKEN_JWT_SECRET = hmac.new(SECRET_KEY.encode(), b"guest-token", hashlib.sha256).hexdigest()
GLOBAL_ASYNC_QUERIES_JWT_SECRET = hmac.new(SECRET_KEY.encode(), b"async-queries", hashlib.sha256).hexdigest()

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


if _THRIFT_CA:
    def DB_CONNECTION_MUTATOR(uri, params, username, security_manager, source):  # noqa: N802 - Superset's name
        """pyhive's ``hive://`` URL has no TLS option: each connection gets a TLS transport instead."""
        if uri.drivername != "hive":
            return uri, params
        from pyhive import hive

        def connect():
            sasl = tls_transport(uri.host, uri.port, str(_THRIFT_CA), uri.username, uri.password)
            return hive.connect(thrift_transport=sasl, username=uri.username)

        return uri, {**params, "creator": connect}
