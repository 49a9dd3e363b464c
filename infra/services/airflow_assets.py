"""The Asset events of a batch publish: which Assets it updates (``LAYERS``), and their events when Airflow
did not run the publish.

Every publish of ``batch.<p>`` (and, in the same step, ``serving.<p>``) records one event for each, so the
data-aware ``tidewater_quality`` follows it. The DAG's ``publish`` task declares these Assets as its outlets
(``dags.tidewater_common.published_assets``), and its success records their events; any other publish
(plain ``tidewater batch <p>``, or ``--publish`` run by hand) records them here (``tidewater batch`` calls
``record_publish`` after a publish, unless the DAG ran it). Through Airflow's REST API (``POST
/api/v2/assets/events``, a JWT from the generated login), with a few seconds' timeout; the publish is done
by then, so a missing or unreachable Airflow is reported in one line, never an error.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from infra.services import airflow, airflow_settings
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

TIMEOUT_SECONDS = 5.0
LAYERS = ("batch", "serving")  # what one batch publish updates (the DAG's publish task's outlets)


def _call(cfg: TidewaterConfig, method: str, path: str, body: Any = None, token: str = "") -> Any:
    req = urllib.request.Request(f"{airflow_settings.base_url(cfg)}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS) as resp:  # noqa: S310 - loopback URL from the config
        return json.loads(resp.read() or b"{}")


def asset_ids(assets: list[dict[str, Any]], uris: list[str]) -> dict[str, int]:
    """The ids of the Assets with exactly these URIs (``uri_pattern`` is a substring match) (pure)."""
    return {a["uri"]: int(a["id"]) for a in assets if a.get("uri") in uris}


def record_publish(cfg: TidewaterConfig, pipeline: str, extra: dict[str, Any]) -> str:
    """Record an Asset event for ``batch.<p>`` and ``serving.<p>``; returns a one-line outcome."""
    names = ", ".join(naming.table(layer, pipeline) for layer in LAYERS)
    if not airflow.enabled(cfg):
        return f"no Asset event for {names}: Airflow is disabled (TIDEWATER_AIRFLOW_DISABLED)"
    if not airflow_settings.passwords_file(cfg).exists():
        return f"no Asset event for {names}: Airflow has not run in this data folder ('tidewater up' starts it)"
    uris = [naming.asset_uri(layer, pipeline) for layer in LAYERS]
    try:
        token = str(_call(cfg, "POST", "/auth/token", {"username": airflow_settings.USER,
                                                       "password": airflow_settings.password(cfg)})["access_token"])
        found = asset_ids(_call(cfg, "GET", "/api/v2/assets?uri_pattern=tidewater://&limit=1000",
                                token=token).get("assets", []), uris)
        for uri in uris:
            if uri in found:
                _call(cfg, "POST", "/api/v2/assets/events", {"asset_id": found[uri], "extra": extra}, token)
    except (OSError, ValueError, KeyError, ServiceError) as exc:  # URLError and HTTPError are OSErrors
        return f"no Asset event for {names}: Airflow at {airflow_settings.base_url(cfg)} did not take it ({exc})"
    missing = [uri for uri in uris if uri not in found]
    if missing:
        return f"no Asset event for {', '.join(missing)}: no DAG declares it (mode {cfg.mode})"
    return f"Asset events recorded for {names} (the DAGs scheduled on them follow)"
