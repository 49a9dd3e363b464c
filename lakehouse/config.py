"""Typed Tidewater configuration: one YAML file plus environment overrides.

The file is ``tidewater.yml`` in the working directory, or the path in ``TIDEWATER_CONFIG``.
Environment variables override single keys (see ``ENV_OVERRIDES``). Every problem raises
:class:`ConfigError` naming the key, what it holds and the form that is expected, or, for a file that does
not parse, :class:`YamlSyntaxError` naming its line and column. The raw values
become the dataclasses of ``lakehouse.config_model`` (the services' sections: ``lakehouse.config_services``) in
``lakehouse.config_parse``; the checks they must pass are ``lakehouse.config_checks``.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from lakehouse.config_checks import validate
from lakehouse.config_model import KafkaConfig, SparkConfig, TidewaterConfig
from lakehouse.config_parse import build, set_dotted
from lakehouse.errors import ConfigError
from lakehouse.yaml_file import read_yaml

__all__ = ["ENV_OVERRIDES", "KafkaConfig", "SparkConfig", "TidewaterConfig", "load_config"]

ENV_OVERRIDES = {
    "TIDEWATER_DATA_DIR": "data_dir",
    "TIDEWATER_MODE": "mode",
    "TIDEWATER_KAFKA_BOOTSTRAP": "kafka.bootstrap_servers",
    "TIDEWATER_KAFKA_PORT": "kafka.port",
    "TIDEWATER_KAFKA_CONTROLLER_PORT": "kafka.controller_port",
    "TIDEWATER_KAFKA_BROKERS": "kafka.brokers",
    "TIDEWATER_SPARK_MASTER": "spark.master",
    "TIDEWATER_SPEED_NICE": "spark.speed_nice",
    "TIDEWATER_SPEED_HOST": "speed.host",
    "TIDEWATER_WARM_UP_PLAN_ROUNDS": "spark.warm_up_plan_rounds",
    "TIDEWATER_WARM_UP_RECORD_ROUNDS": "spark.warm_up_record_rounds",
    "TIDEWATER_INTERPRETED_MAX_RECORDS": "spark.interpreted_max_records",
    "TIDEWATER_MAX_OFFSETS_PER_TRIGGER": "spark.max_offsets_per_trigger",
    "TIDEWATER_METASTORE_PORT": "metastore.port",
    "TIDEWATER_METASTORE_BACKEND": "metastore.backend",
    "TIDEWATER_AIRFLOW_DATABASE": "airflow.database",
    "TIDEWATER_POSTGRES_PORT": "postgres.port",
    "TIDEWATER_THRIFT_PORT": "thrift.port",
    "TIDEWATER_THRIFT_MAX_STALENESS_SECONDS": "thrift.max_staleness_seconds",
    "TIDEWATER_THRIFT_TLS": "thrift.tls",
    "TIDEWATER_AIRFLOW_PORT": "airflow.port",
    "TIDEWATER_AIRFLOW_ACTIVE_DAGS": "airflow.active_dags",
    "TIDEWATER_BI_ENABLED": "bi.enabled",
    "TIDEWATER_BI_PORT": "bi.port",
    "TIDEWATER_JOB_SERVICE_ENABLED": "job_service.enabled",
    "TIDEWATER_JOB_SERVICE_PORT": "job_service.port",
    "TIDEWATER_JVM_OPTIONS": "jvm_options",
}


def load_config(path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> TidewaterConfig:
    """Load ``tidewater.yml`` (or ``path``/``$TIDEWATER_CONFIG``), apply env overrides, validate."""
    env = dict(os.environ if env is None else env)
    explicit = path or env.get("TIDEWATER_CONFIG")
    cfg_path = Path(explicit) if explicit else Path("tidewater.yml")
    raw: dict[str, Any] = {}
    if cfg_path.exists():
        loaded = read_yaml(cfg_path) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(str(cfg_path), type(loaded).__name__, "a YAML mapping of keys")
        raw = loaded
    elif explicit:
        raise ConfigError("TIDEWATER_CONFIG", str(cfg_path), "the path of an existing YAML file")
    from_env = {dotted: var for var, dotted in ENV_OVERRIDES.items() if env.get(var)}
    for dotted, var in from_env.items():
        set_dotted(raw, dotted, env[var])
    try:
        cfg = build(TidewaterConfig, raw)
        data_dir = cfg.data_dir if cfg.data_dir.is_absolute() else (cfg_path.resolve().parent / cfg.data_dir)
        cfg = TidewaterConfig(**{**{f.name: getattr(cfg, f.name) for f in fields(cfg)}, "data_dir": data_dir,
                                 "source": str(cfg_path.resolve()) if cfg_path.exists() else "<defaults>"})
        validate(cfg)
    except ConfigError as exc:  # a value set by an environment variable: the error names the variable to fix
        if exc.key not in from_env or exc.source:
            raise
        raise ConfigError(exc.key, exc.value, exc.expected, source=from_env[exc.key]) from None
    return cfg
