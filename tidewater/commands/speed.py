"""``tidewater speed start|stop|status|run <pipeline>``: the detached speed-layer job (or, with
``speed.host: shared``, the pipeline's queries in the shared speed host).

Job control itself (start, stop, status, lag) is ``spark_jobs.speed.control``. ``status`` exits 0 when
the job runs, 1 when it does not, 4 (``TopicMissing``) when the pipeline's topic does not exist."""

from __future__ import annotations

import argparse
import json

from lakehouse.errors import TopicMissing
from lakehouse.speed_versions import active_version
from spark_jobs.speed.control import job_facts, require_topic, speed_status, start_speed, stop_speed
from spark_jobs.speed.job import run
from tidewater.commands import Subparsers, add_pipeline_arg, config_from, pipeline_from, progress


def cmd_speed(args: argparse.Namespace) -> int:
    cfg = config_from(args)
    p = pipeline_from(args, cfg)

    if args.action == "start":
        progress(f"starting speed layer for {p.name} …")
        pid = start_speed(cfg, p, args.version)
        where = " in the shared speed host" if cfg.speed.host == "shared" else ""
        print(f"speed {p.name}: running{where} (pid {pid}); log {job_facts(cfg, p)['log']}")
    elif args.action == "stop":
        print(f"speed {p.name}: {'stopped' if stop_speed(cfg, p) else 'was not running'}")
    elif args.action == "run":
        require_topic(cfg, p)
        run(cfg, p, args.version or active_version(cfg, p.name), ["ingest", "speed"])
    else:
        st = speed_status(cfg, p)
        if args.json:
            print(json.dumps(st, indent=2, default=str))
        else:
            for key in ("pipeline", "version", "host", "running", "pid", "topic", "last_batch_time", "watermark",
                        "input_rows_per_second", "processed_rows_per_second", "lag", "log", "error", "problem"):
                if key not in ("error", "problem") or st.get(key):
                    print(f"{key:<26} {st.get(key)}")
        if st.get("topic_exists") is False:  # exit 4 (and one line), whether or not a job runs
            raise TopicMissing(p.name, p.topic, cfg.kafka.bootstrap)
        return 0 if st["running"] else 1
    return 0


def register(sub: Subparsers) -> None:
    p = sub.add_parser("speed", help="start, stop or inspect a pipeline's streaming job")
    p.add_argument("action", choices=["start", "stop", "status", "run"])
    add_pipeline_arg(p)
    p.add_argument("--version", type=int, help="query version (default: the active one)")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(handler=cmd_speed)
