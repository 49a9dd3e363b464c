"""Who may use the Thrift server (JDBC), and how clients log in.

Users (``BI_USERS``): ``analyst``, read-only for BI tools, and ``admin``, every statement (maintenance
such as ``OPTIMIZE`` and ``VACUUM`` included). Their roles are in ONE rules file, ``infra/thrift_access.json``
(``RULES_FILE``; format in docs/operations.md), which the server's access control enforces on every analyzed
plan (``infra/java/io/tidewater/spark/authz``).

Passwords: ``TIDEWATER_BI_<USER>_PASSWORD`` when set, else generated at the first start; either way kept
in ``<data_dir>/secrets/thrift_<user>.password`` (0600), the file clients read (beeline ``-w <file>``), so
no password is ever on a command line. The server gets only salted PBKDF2 hashes, in
``<data_dir>/secrets/thrift_credentials.json`` (0600), rewritten at each start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from infra.secret_files import kept_password, pbkdf2_entry
from infra.services import thrift_tls
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

BI_USERS = ("analyst", "admin")
READ_ONLY_USER = "analyst"
ADMIN_USER = "admin"
RULES_FILE = Path(__file__).resolve().parents[1] / "thrift_access.json"
AUTH = "CUSTOM"  # hive.server2.authentication; clients: SASL PLAIN with user and password
PBKDF2_ITERATIONS = 600_000  # OWASP's figure for PBKDF2-HMAC-SHA256; paid once per user and server start
REFUSED_LOGIN = "Error validating the login"  # what HiveServer2 tells a client whose password check failed


def password_env(user: str) -> str:
    return f"TIDEWATER_BI_{user.upper()}_PASSWORD"


def password_file(cfg: TidewaterConfig, user: str) -> Path:
    return password_file_in(naming.secrets_dir(cfg), user)


def password_file_in(secrets: Path, user: str) -> Path:
    return secrets / f"thrift_{user}.password"


def password(cfg: TidewaterConfig, user: str) -> str:
    """``user``'s password: from the environment or its file (generated there at the first call)."""
    return password_in(naming.secrets_dir(cfg), user)


def password_in(secrets: Path, user: str) -> str:
    """``password`` for a process that knows the secrets folder, not the configuration (Superset's)."""
    if user not in BI_USERS:
        raise ServiceError(f"thrift: no such user {user!r}; the users are {', '.join(BI_USERS)}")
    return kept_password(password_file_in(secrets, user), password_env(user))


def where(cfg: TidewaterConfig) -> str:
    """Where the passwords are, for every message about a refused login."""
    files = ", ".join(str(password_file(cfg, u)) for u in BI_USERS)
    names = ", ".join(f"${password_env(u)}" for u in BI_USERS)
    return f"the JDBC passwords are in {files} (set from {names} when those are set)"


def credentials_file(cfg: TidewaterConfig) -> Path:
    return naming.secrets_dir(cfg) / "thrift_credentials.json"


def write_credentials(cfg: TidewaterConfig) -> Path:
    """The server's credentials file: a salted hash per user and the hint its refusals give."""
    users = {user: pbkdf2_entry(password(cfg, user), PBKDF2_ITERATIONS) for user in BI_USERS}
    path = credentials_file(cfg)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"hint": where(cfg), "users": users}, fh)
    os.chmod(path, 0o600)
    return path


def sqlalchemy_url(cfg: TidewaterConfig, user: str = READ_ONLY_USER) -> str:
    """pyhive's ``hive://`` URL with ``user``'s password (for a program's memory, never a command line).
    Without TLS only: pyhive's URL has no TLS option (``thrift.tls``: ``create_engine("hive://", creator=…)``)."""
    return logged_in(f"hive://{cfg.thrift.host}:{cfg.thrift.port}/default", naming.secrets_dir(cfg), user)


def logged_in(url: str, secrets: Path, user: str = READ_ONLY_USER) -> str:
    """A ``hive://`` URL of the server (any user, any ``auth``) as ``user`` with its password."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "auth"] + [("auth", AUTH)]
    netloc = f"{user}:{quote(password_in(secrets, user), safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


def connect(cfg: TidewaterConfig, user: str = READ_ONLY_USER, **kwargs: Any) -> Any:  # pyhive is untyped
    """A pyhive connection as ``user`` (over TLS with ``thrift.tls``); a refused login says where the passwords are."""
    # imported here, not at the top: every CLI command imports this module (tidewater beeline), few connect
    from pyhive import hive
    from thrift.transport.TTransport import TTransportException

    try:
        if cfg.thrift.tls:
            return hive.connect(thrift_transport=thrift_tls.transport(cfg, user, password(cfg, user)), username=user,
                                **kwargs)
        return hive.connect(host=cfg.thrift.host, port=cfg.thrift.port, username=user, password=password(cfg, user),
                            auth=AUTH, **kwargs)
    except TTransportException as exc:
        if REFUSED_LOGIN in str(exc):
            raise ServiceError(f"thrift: login refused for {user!r}; {where(cfg)}") from exc
        raise
