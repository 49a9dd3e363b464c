"""Nested settings compared key by key (pure): what changed, named ``key: old -> new``.

Used for the settings a running Airflow was started with (``infra.services.airflow_drift``) and for the
pipeline definition a table was computed under (``lakehouse.definition``).
"""

from __future__ import annotations

import json
from typing import Any


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested settings as ``{"a.b": "<json of the value>"}``."""
    out: dict[str, str] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value, default=str)
    return out


def differences(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """``key: old -> new`` for each setting that changed, appeared or went."""
    return [f"{key}: {recorded.get(key, '(unset)')} -> {current.get(key, '(unset)')}"
            for key in sorted(set(recorded) | set(current)) if recorded.get(key) != current.get(key)]
