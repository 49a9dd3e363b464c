"""``tidewater beeline [BEELINE ARGS…]``: the Hive JDBC shell (beeline) on the Thrift server.

pyspark's wheel ships beeline (``pyspark/bin/beeline`` with the Hive JDBC driver in ``pyspark/jars``),
but the copy pip puts in ``.venv/bin`` looks for ``SPARK_HOME`` by running ``python3`` from PATH,
which fails outside an activated venv. This command sets ``SPARK_HOME`` to this venv's pyspark and
execs its beeline, with two defaults: ``-u`` is the configured Thrift server's URL
(``jdbc:hive2://<thrift.host>:<thrift.port>/default;auth=noSasl``) and ``-n`` the OS user (without a
user, beeline's NOSASL session fails with "Null user"; the server has no authentication, so any name
works and no password is asked). Every other argument goes to beeline unchanged, e.g.
``tidewater beeline -e 'SHOW TABLES IN serving'`` or ``tidewater beeline --outputformat=csv2 -f q.sql``.
"""

from __future__ import annotations

import argparse
import getpass
import os
from importlib.util import find_spec
from pathlib import Path

from lakehouse.errors import TidewaterError
from tidewater.commands import Subparsers, config_from


def spark_home() -> Path:
    spec = find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise TidewaterError("beeline: pyspark is not installed in this environment; run 'make setup'")
    return Path(spec.origin).resolve().parent


def default_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER: any name works (NOSASL)
        return "tidewater"


def beeline_argv(args: list[str], url: str, user: str) -> list[str]:
    """beeline's arguments: ``args`` as given, plus ``-u url`` / ``-n user`` when they are missing."""
    args = args[1:] if args[:1] == ["--"] else list(args)
    if any(a in ("-h", "--help") for a in args):
        return args
    extra: list[str] = []
    if not any(a == "-u" or a.startswith("--url") for a in args):
        extra += ["-u", url]
    if not any(a == "-n" or a.startswith("--user") for a in args):
        extra += ["-n", user]
    return [*extra, *args]


def cmd_beeline(args: argparse.Namespace) -> int:
    from infra.jvm import require_java
    from infra.services.thrift_server import jdbc_url

    require_java()  # beeline is a JVM too
    cfg = config_from(args)
    home = spark_home()
    script = home / "bin" / "beeline"
    if not script.is_file():
        raise TidewaterError(f"beeline: {script} not found; reinstall pyspark ('make setup')")
    env = {**os.environ, "SPARK_HOME": str(home)}
    argv = beeline_argv(args.beeline_args, jdbc_url(cfg), default_user())
    os.execve(str(script), [str(script), *argv], env)
    return 0  # not reached: execve replaces this process


def register(sub: Subparsers) -> None:
    # "+" as the only prefix char: every "-x" argument goes to beeline (``--help`` prints beeline's)
    p = sub.add_parser("beeline", prefix_chars="+", add_help=False,
                       help="the Hive JDBC shell on the Thrift server (URL and user defaulted; args go to beeline)")
    p.add_argument("beeline_args", nargs=argparse.REMAINDER, help="arguments for beeline, e.g. -e 'SHOW TABLES'")
    p.set_defaults(handler=cmd_beeline)
