"""Generated secrets on disk: the one way Tidewater creates a secret file (0600, folder 0700).

``create_once`` is safe when two commands start at the same time: the content is written to a
private temp file and linked into place, so a racing creator either wins or finds the finished
file; nobody reads a half-written secret, and the loser's value is discarded, not used.
"""

from __future__ import annotations

import contextlib
import os
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
    import secrets

    if os.environ.get(env_var):
        return os.environ[env_var]
    create_once(path, lambda: secrets.token_urlsafe(24))
    return path.read_text().strip()
