"""The client side of the job service: forward a Spark-bound command to the warm driver.

``tidewater <cmd>`` for a command in ``FORWARDED`` sends its argv to the job service (infra/services/
job_service.py) when one runs for this configuration and code (same fingerprint), prints the output
as it streams back and exits with the command's exit status. Otherwise (no service, disabled, another
config or code, ``--local`` or ``TIDEWATER_LOCAL=1``) the command runs in this process, as before.

Fail closed: once the service has the command, a broken connection (the service died or stopped
answering) is one line and exit 2, never a second, local run of a half-done command.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import urllib.error
from pathlib import Path
from typing import TYPE_CHECKING

from infra import job_service
from lakehouse.config import load_config
from lakehouse.errors import ServiceError, TidewaterError

if TYPE_CHECKING:
    from lakehouse.config import TidewaterConfig

# Commands that start Spark; 'speed' jobs and 'replay' (which starts and stops them) keep their own processes.
FORWARDED = frozenset({"batch", "serving", "reconcile", "sql", "check", "maintenance", "whatif"})
PATH_OPTIONS = ("--config", "--chart")  # made absolute before forwarding
LOCAL_ENV = "TIDEWATER_LOCAL"
READ_TIMEOUT = 60.0  # the service pings every 10 s while a command runs


def wants_service(args: argparse.Namespace) -> bool:
    return (args.command in FORWARDED and not getattr(args, "local", False)
            and os.environ.get(LOCAL_ENV, "").lower() not in ("1", "true", "yes"))


def absolute_config(argv: list[str]) -> list[str]:
    """``--config PATH`` (and the other ``PATH_OPTIONS``) made absolute: the service runs in another working
    directory."""
    out = list(argv)
    for i, arg in enumerate(out):
        name = arg.split("=", 1)[0]
        if name not in PATH_OPTIONS:
            continue
        if "=" in arg:
            out[i] = f"{name}={Path(arg.split('=', 1)[1]).resolve()}"
        elif i + 1 < len(out):
            out[i + 1] = str(Path(out[i + 1]).resolve())
    return out


def forward(argv: list[str], args: argparse.Namespace) -> int | None:
    """The exit status of ``argv`` run by the job service, or None: run it here (nothing was sent)."""
    try:
        cfg = load_config(args.config)
    except TidewaterError:
        return None  # the local run reports it
    if not cfg.job_service.enabled or not job_service.token(cfg):
        return None
    body = {"argv": absolute_config(argv), "fingerprint": job_service.fingerprint(cfg)}
    try:
        resp = job_service.request(cfg, "/run", body, timeout=READ_TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            print(f"tidewater: the job service at {job_service.base_url(cfg)} refused the token in "
                  f"{job_service.token_file(cfg)}; running here", file=sys.stderr)
        if exc.code == 409:
            print(f"tidewater: the job service at {job_service.base_url(cfg)} runs another configuration or an "
                  "older copy of the code; running here, with a JVM start ('tidewater up' restarts an idle service)",
                  file=sys.stderr)
        return None
    except urllib.error.URLError:
        return None  # not running: nothing was sent
    except (OSError, http.client.HTTPException) as exc:
        raise _broken(cfg, argv, exc) from None
    with resp:
        try:
            for line in resp:
                message = json.loads(line)
                if "out" in message:
                    sys.stdout.write(message["out"])
                    sys.stdout.flush()
                elif "err" in message:
                    sys.stderr.write(message["err"])
                    sys.stderr.flush()
                elif "exit" in message:
                    return int(message["exit"])
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise _broken(cfg, argv, exc) from None
    raise _broken(cfg, argv, EOFError("no exit status"))


def _broken(cfg: TidewaterConfig, argv: list[str], exc: BaseException) -> ServiceError:
    log = job_service.log_file(cfg)
    return ServiceError(f"job service: the connection broke while it ran 'tidewater {' '.join(argv)}' "
                        f"({exc.__class__.__name__}); the command may have run in part and was not re-run "
                        f"here; see 'tidewater status' and {log}")
