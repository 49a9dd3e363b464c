"""Generated secrets on disk: the one way Tidewater creates a secret file (0600, folder 0700), and
the salted hashes of passwords a server keeps instead of the passwords.

``create_once`` is safe when two commands start at the same time: the content is written to a
private temp file and linked into place, so a racing creator either wins or finds the finished
file; nobody reads a half-written secret, and the loser's value is discarded, not used.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path


def create_once(path: Path, content: Callable[[], str]) -> None:
    """Write ``content()`` to ``path`` (mode 0600) unless the file exists already."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(content())
        with contextlib.suppress(FileExistsError):  # another process got there first: keep its file
            os.link(tmp, path)  # atomic, and fails if the file exists
    finally:
        os.unlink(tmp)


def generated_password(path: Path, env_var: str) -> str:
    """A password from ``env_var``, else generated once into ``path`` (0600, ``create_once``)."""
    if os.environ.get(env_var):
        return os.environ[env_var]
    create_once(path, lambda: secrets.token_urlsafe(24))
    return path.read_text().strip()


def kept_password(path: Path, env_var: str) -> str:
    """A password kept in ``path`` (0600) for clients to read: ``env_var``'s value when set (written to
    ``path`` when it differs, so the file always holds the password in use), else generated once."""
    wanted = os.environ.get(env_var)
    if wanted and (not path.exists() or path.read_text().strip() != wanted):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # 0600
        with os.fdopen(fd, "w") as fh:
            fh.write(wanted)
        os.replace(tmp, path)
    create_once(path, lambda: secrets.token_urlsafe(24))
    return path.read_text().strip()


def pbkdf2_entry(password: str, iterations: int) -> dict[str, object]:
    """A salted PBKDF2-HMAC-SHA256 hash of ``password`` as a JSON-ready entry (read by the Thrift
    server's ``io.tidewater.spark.auth.PasswordFileAuthenticator``)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return {"algorithm": "PBKDF2WithHmacSHA256", "iterations": iterations,
            "salt": base64.b64encode(salt).decode(), "hash": base64.b64encode(digest).decode()}
