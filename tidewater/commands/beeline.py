"""``tidewater beeline [BEELINE ARGS…]``: the Hive JDBC shell (beeline) on the Thrift server.

pyspark's wheel ships beeline (``pyspark/bin/beeline`` with the Hive JDBC driver in ``pyspark/jars``),
but the copy pip puts in ``.venv/bin`` looks for ``SPARK_HOME`` by running ``python3`` from PATH,
which fails outside an activated venv. This command sets ``SPARK_HOME`` to this venv's pyspark and
execs its beeline, with defaults: ``-u`` is the configured Thrift server's URL
(``jdbc:hive2://<thrift.host>:<thrift.port>/default``, with ``thrift.tls`` plus ``;ssl=true;sslTrustStore=<the
generated truststore>``), ``-n`` the read-only BI user ``analyst``, and,
unless ``-p`` or ``-w`` is given, ``-w <data_dir>/secrets/thrift_<user>.password``: beeline reads the
password from that file, so it is never on a command line (``infra.services.thrift_access``). Every
other argument goes to beeline unchanged, e.g. ``tidewater beeline -e 'SHOW TABLES IN serving'``,
``tidewater beeline -n admin -e 'OPTIMIZE bronze.sensor_readings'`` or ``tidewater beeline
--outputformat=csv2 -f q.sql``.
"""

from __future__ import annotations

import argparse
import os
from importlib.util import find_spec
from pathlib import Path

from infra.jvm import require_java
from infra.services import thrift_access
from infra.services.thrift_server import jdbc_url
from lakehouse.config import TidewaterConfig
from lakehouse.errors import TidewaterError
from tidewater.commands import Subparsers, config_from


def spark_home() -> Path:
    spec = find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise TidewaterError("beeline: pyspark is not installed in this environment; run 'make setup'")
    return Path(spec.origin).resolve().parent


def _value(args: list[str], short: str, long: str) -> str | None:
    """The value of ``-x VALUE``, ``--long=VALUE`` or ``--long VALUE`` in beeline's arguments."""
    for i, a in enumerate(args):
        if a in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(f"{long}="):
            return a.split("=", 1)[1]
    return None


def beeline_argv(args: list[str], url: str, cfg: TidewaterConfig) -> list[str]:
    """beeline's arguments: ``args`` as given, plus ``-u url``, ``-n analyst`` and ``-w <password file>``
    when they are missing."""
    args = args[1:] if args[:1] == ["--"] else list(args)
    if any(a in ("-h", "--help") for a in args):
        return args
    extra: list[str] = []
    if _value(args, "-u", "--url") is None:
        extra += ["-u", url]
    user = _value(args, "-n", "--username")
    if user is None:
        user = thrift_access.READ_ONLY_USER
        extra += ["-n", user]
    if _value(args, "-p", "--password") is None and _value(args, "-w", "--password-file") is None:
        if user not in thrift_access.BI_USERS:
            raise TidewaterError(f"beeline: no such user {user!r}; the users are {', '.join(thrift_access.BI_USERS)}")
        thrift_access.password(cfg, user)  # the file exists from here on
        extra += ["-w", str(thrift_access.password_file(cfg, user))]
    return [*extra, *args]


def cmd_beeline(args: argparse.Namespace) -> int:
    require_java()  # beeline is a JVM too
    cfg = config_from(args)
    home = spark_home()
    script = home / "bin" / "beeline"
    if not script.is_file():
        raise TidewaterError(f"beeline: {script} not found; reinstall pyspark ('make setup')")
    env = {**os.environ, "SPARK_HOME": str(home)}
    argv = beeline_argv(args.beeline_args, jdbc_url(cfg), cfg)
    os.execve(str(script), [str(script), *argv], env)
    return 0  # not reached: execve replaces this process


def register(sub: Subparsers) -> None:
    # "+" as the only prefix char: every "-x" argument goes to beeline (``--help`` prints beeline's)
    p = sub.add_parser("beeline", prefix_chars="+", add_help=False,
                       help="the Hive JDBC shell on the Thrift server (URL, user and password file defaulted; "
                       "args go to beeline)")
    p.add_argument("beeline_args", nargs=argparse.REMAINDER, help="arguments for beeline, e.g. -e 'SHOW TABLES'")
    p.set_defaults(handler=cmd_beeline)
