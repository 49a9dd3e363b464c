"""``tidewater setup|up|down|status|config show``: the local stack's lifecycle."""

from __future__ import annotations

import argparse
import importlib
import json
import time
from typing import Any

import yaml

from infra.jars import fetch_jars
from infra.jvm import require_java
from infra.services import SERVICE_MODULES
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from lakehouse.pipeline import available_pipelines, load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic, require_log_append_time
from spark_jobs.shared.locks import exclusive, exclusive_file
from spark_jobs.speed.control import stop_all_speed
from tidewater.class_data_archive_build import build
from tidewater.commands import Subparsers, config_from, progress
from tidewater.commands.mode_switch import apply_mode


def _services() -> list[Any]:
    return [importlib.import_module(name) for name in SERVICE_MODULES]  # a missing one fails, never vanishes


def _name(svc: Any) -> str:
    return str(svc.__name__).split(".")[-1]


def select_services(only: list[str] | None) -> list[Any]:
    """Every service, or those named in ``--only``; an unknown name is an error listing the valid ones."""
    valid = [module.split(".")[-1] for module in SERVICE_MODULES]
    unknown = [name for name in only or [] if name not in valid]
    if unknown:
        raise TidewaterError(f"up: unknown service {', '.join(repr(n) for n in unknown)}; "
                             f"valid names: {', '.join(valid)}")
    return [svc for svc in _services() if not only or _name(svc) in only]


def create_topics(cfg: TidewaterConfig) -> list[str]:
    """Create every pipeline's topic (idempotent) with the configured partitions and retention; refuse
    an existing one whose record times come from the producers' clocks."""
    made = []
    for name in available_pipelines():
        p = load_pipeline(name, cfg.pipelines)
        if ensure_topic(cfg, p.topic):
            made.append(p.topic)
        else:
            require_log_append_time(cfg, p.topic)
    return made


SETUP_LOCK_WAIT_SECONDS = 1800.0


def cmd_setup(args: argparse.Namespace) -> int:
    """Jars, then the class-data-sharing archives, one setup of a checkout at a time: a second one
    started together (``make demo`` and ``make test`` on a fresh clone) waits, then finds both cached."""
    lock = naming.cache_dir() / "setup.lock"
    with exclusive_file(lock, SETUP_LOCK_WAIT_SECONDS):
        return _setup(args)


def _setup(args: argparse.Namespace) -> int:
    progress("fetching JVM jars with Maven (Delta, Kafka connector, Kafka broker, Derby) …")
    started = time.monotonic()
    ran = fetch_jars(force=args.force)
    print(f"jars {'fetched' if ran else 'already cached'} in {time.monotonic() - started:.1f}s")

    progress("class-data-sharing archives for Spark driver JVMs (about 2 minutes the first time) …")
    for line in build(force=args.force):
        print(line)
    return 0


STACK_LOCK = "stack"  # one 'up' or 'down' of a data folder at a time
STACK_LOCK_WAIT_SECONDS = 900.0


def stack_lock(cfg: TidewaterConfig) -> Any:
    """Held by ``up`` and ``down`` from their first service to their last: two started together run in
    turn (the second finds the services running, or stopped), instead of both spawning a process
    between one's PID-file check and its write, and one PID file then naming the process that lost."""
    return exclusive(cfg, STACK_LOCK, STACK_LOCK_WAIT_SECONDS)


def cmd_up(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    selected = [svc for svc in select_services(args.only) if getattr(svc, "enabled", lambda c: True)(cfg)]
    if any(_name(svc) != "airflow" for svc in selected):
        require_java()
    with stack_lock(cfg):  # not around the topics: idempotent, and slow while a broker is down
        if fetch_jars():
            progress("fetched JVM jars")
        for svc in selected:
            progress(f"starting {_name(svc)} …")
            svc.start(cfg)
    made = create_topics(cfg)
    if made:
        progress(f"created topics {', '.join(made)}")
    if not args.only:  # the whole stack: a changed mode reaches the speed jobs and serving views too

        with stack_lock(cfg):
            apply_mode(cfg)
    shown = cmd_status(args)  # every service's row; the exit status is the started ones' (``--only``)
    return shown if not args.only else 0 if all(r["healthy"] for s in selected for r in _rows(s, cfg)) else 1


def cmd_down(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    services = list(reversed(_services()))
    schedulers = [svc for svc in services if _name(svc) == "airflow"]  # first: its speed supervisor
    with stack_lock(cfg):                                               # would restart the jobs stopped next
        for svc in schedulers:
            if svc.stop(cfg):
                print(f"stopped {_name(svc)}")
        for name in stop_all_speed(cfg):
            print(f"stopped speed job {name}")
        for svc in services:
            if svc not in schedulers and svc.stop(cfg):
                print(f"stopped {_name(svc)}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    rows = [row for svc in _services() if getattr(svc, "enabled", lambda c: True)(cfg) for row in _rows(svc, cfg)]
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2, default=str))
    else:
        for row in rows:
            state = "healthy" if row["healthy"] else ("running, unhealthy" if row.get("pid") else "down")
            extra = "  ".join(f"{k}={v}" for k, v in row.items() if k not in ("service", "healthy", "pid", "log"))
            print(f"{row['service']:<10} {state:<18} pid={row.get('pid') or '-':<8} {extra}")
    return 0 if all(r["healthy"] for r in rows) else 1


def _rows(svc: Any, cfg: TidewaterConfig) -> list[dict[str, Any]]:
    """A service's status rows: Kafka has one per broker (``status_rows``), the others one."""
    return list(svc.status_rows(cfg)) if hasattr(svc, "status_rows") else [svc.status(cfg)]


def cmd_config_show(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    print(f"# source: {cfg.source}")
    data = cfg.as_dict()
    data.pop("source", None)
    print(yaml.safe_dump(data, sort_keys=False).rstrip())
    return 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser("setup", help="fetch JVM jars with Maven into .cache/jars (idempotent)")
    p.add_argument("--force", action="store_true", help="run Maven even if jars are cached")
    p.set_defaults(handler=cmd_setup)
    p = sub.add_parser("up", help="start the local stack ([PostgreSQL,] metastore, Kafka, Thrift, job service, Airflow) "
                                  "and create topics")
    p.add_argument("--only", nargs="*", metavar="SERVICE",
                   help="start only these services: postgres, metastore, kafka_broker, thrift_server, job_service, "
                        "airflow")
    p.set_defaults(handler=cmd_up, json=False)
    p = sub.add_parser("down", help="stop speed jobs and every local service")
    p.set_defaults(handler=cmd_down)
    p = sub.add_parser("status", help="health of every local service")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_status)
    p = sub.add_parser("config", help="configuration")
    csub = p.add_subparsers(dest="config_command", metavar="show")
    csub.required = True
    s = csub.add_parser("show", help="print the effective configuration (file + environment)")
    s.set_defaults(handler=cmd_config_show)
