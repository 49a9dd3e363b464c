"""The WSGI app gunicorn serves (``wsgi:application``): Superset, provisioned first in the same
process, which saves one Superset start (10-30 s on 2 cores). A provisioning error stops the worker
before it serves; ``infra/services/superset.py`` then reports the log's tail."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import provision  # noqa: E402
from superset.app import create_app  # noqa: E402

application = create_app()
provision.provision(application)
