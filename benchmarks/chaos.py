"""``make chaos``: the long operation sequence (``chaos_sequence``) on an isolated stack, every pipeline in
both modes (six sequences of ``--steps`` / 6 operations each, 300 by default), under a host zone east of
UTC, with the tests' short-lived JVM flags and one warm-up round per speed job (the environment overrides
them). Each step's operation, duration, its check's phases and every invariant's outcome go into
``benchmarks/results/<UTC time>-chaos/chaos.json`` (with the seed and the git commit) and a summary
``chaos.md``. A broken invariant ends the run; the files then say where, and the seed repeats it.

Run: ``python -m benchmarks.chaos [--steps 300] [--seed N] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.chaos_sequence import OperationSequence
from benchmarks.harness import RESULTS, git_facts
from benchmarks.stack import isolated_stack
from infra.spark_session import get_spark
from lakehouse.config import load_config
from lakehouse.pipeline import available_pipelines, load_pipeline
from spark_jobs.io.kafka_admin import ensure_topic
from spark_jobs.speed.control import stop_speed
from tidewater.isolated_stack import ONE_WARM_UP_ROUND, SHORT_LIVED_JVM_OPTIONS

HOST_TZ = "Asia/Kolkata"
MODES = ("lambda", "kappa")


def run(steps: int, seed: int, out: Path) -> dict[str, Any]:
    os.environ["TZ"] = HOST_TZ
    time.tzset()
    for name, value in {"TIDEWATER_JVM_OPTIONS": SHORT_LIVED_JVM_OPTIONS, **ONE_WARM_UP_ROUND}.items():
        os.environ.setdefault(name, value)  # the tests' JVM flags and warm-up: no latency measured here
    names = sorted(available_pipelines())
    per_sequence = -(-steps // (len(names) * len(MODES)))
    result: dict[str, Any] = {"seed": seed, "steps_requested": steps, "host_tz": HOST_TZ, "git": git_facts(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "sequences": []}
    with isolated_stack(alerts=True) as stack_cfg:  # the product as shipped, alerts queries included
        spark = get_spark(stack_cfg, "tidewater-chaos")
        for mode in MODES:
            os.environ["TIDEWATER_MODE"] = mode
            cfg = load_config()
            for name in names:
                p = load_pipeline(name, cfg.pipelines)
                ensure_topic(cfg, p.topic)
                sequence = OperationSequence(spark, cfg, p, seed)
                entry: dict[str, Any] = {"mode": mode, "pipeline": name, "window": p.window.type,
                                         "operations": sequence.counts, "steps": sequence.steps}
                sequence.on_step = lambda: write(result, out)  # a run cut short keeps every step done
                result["sequences"].append(entry)
                try:
                    sequence.run(per_sequence)
                except AssertionError as exc:
                    entry["failure"] = str(exc)
                    return finish(result, out)
                finally:
                    stop_speed(cfg, p)
                    write(result, out)
    return finish(result, out)


def finish(result: dict[str, Any], out: Path) -> dict[str, Any]:
    steps = [s for seq in result["sequences"] for s in seq["steps"] if s["operation"] != "start"]
    checks = Counter((name, held) for s in steps for name, held in s["invariants"].items())
    result["summary"] = {
        "operations": len(steps), "by_operation": dict(Counter(s["operation"] for s in steps)),
        "invariant_checks": {name: {"held": checks[(name, True)], "broken": checks[(name, False)],
                                    "not_applicable": checks[(name, None)]}
                             for name in sorted({n for n, _ in checks})},
        "seconds_by_operation": seconds_by_operation(steps),
        "failed": any("failure" in seq for seq in result["sequences"])}
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write(result, out)
    return result


def seconds_by_operation(steps: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per operation kind, and over all (``*``): the mean seconds of the operation and of its check."""
    kinds: dict[str, list[dict[str, Any]]] = {"*": steps}
    for s in steps:
        kinds.setdefault(s["operation"], []).append(s)
    return {kind: {"count": len(done), "operation": round(sum(s["seconds"] for s in done) / len(done), 1),
                   "check": round(sum(sum(s.get("check_seconds", {}).values()) for s in done) / len(done), 1)}
            for kind, done in sorted(kinds.items()) if done}


def write(result: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "chaos.json").write_text(json.dumps(result, indent=1, default=str))
    summary = result.get("summary")
    lines = [f"# Chaos sequence, seed {result['seed']}", "",
             f"Commit {result['git'].get('commit')} (dirty: {result['git'].get('dirty')}), host zone {result['host_tz']}, "
             f"started {result['started']}, finished {result.get('finished', '(running)')}.", "",
             *([f"**{result['stopped']}.**", ""] if result.get("stopped") else []),
             "| mode | pipeline | window | operations | result |", "|---|---|---|---|---|"]
    for seq in result["sequences"]:
        done = sum(1 for s in seq.get("steps", []) if s["operation"] != "start")
        outcome = "failed: " + seq["failure"].splitlines()[0] if "failure" in seq else "every invariant held"
        lines.append(f"| {seq['mode']} | {seq['pipeline']} | {seq['window']} | {done} | {outcome} |")
    if summary:
        lines += ["", f"Operations: {summary['operations']} ({summary['by_operation']}).", "",
                  "| invariant | held | broken | not applicable |", "|---|---|---|---|"]
        lines += [f"| {name} | {c['held']} | {c['broken']} | {c['not_applicable']} |"
                  for name, c in summary["invariant_checks"].items()]
        lines += ["", "| operation | count | mean seconds | mean check seconds |", "|---|---|---|---|"]
        lines += [f"| {kind} | {c['count']} | {c['operation']} | {c['check']} |"
                  for kind, c in summary["seconds_by_operation"].items()]
    (out / "chaos.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chaos")
    parser.add_argument("--steps", type=int, default=300, help="operations in all (default 300)")
    parser.add_argument("--seed", type=int, help="seed of the sequences (default: a new one, printed)")
    parser.add_argument("--out", help="result folder (default benchmarks/results/<UTC time>-chaos)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    out = Path(args.out) if args.out else RESULTS / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-chaos"
    print(f"chaos: seed {seed} (--seed {seed} repeats it); results in {out}", flush=True)
    result = run(args.steps, seed, out)
    print((out / "chaos.md").read_text(), flush=True)
    return 1 if result["summary"]["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
