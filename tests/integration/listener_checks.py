"""Helpers of tests/integration/test_listener_security.py: HTTP without exceptions for refusals, where a
port listens, which command lines hold a secret, a documented code block, Superset's signing key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import socket
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def http(url: str, headers: dict[str, str] | None = None, body: bytes | None = None) -> tuple[int, str]:
    """(status, body text) of a GET, or of a POST with ``body``; an error status is returned, not raised."""
    req = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:  # noqa: S310 - the test stack's loopback URLs
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def outside_addresses() -> list[str]:
    """This host's own addresses that are not loopback (IPv4)."""
    import psutil

    return [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
            if a.family == socket.AF_INET and not a.address.startswith("127.")]


def assert_loopback_only(name: str, port: int) -> None:
    """``port`` listens, on loopback addresses only, and a connection to the host's outside address is refused."""
    import psutil

    bound = {c.laddr.ip for c in psutil.net_connections(kind="inet")
             if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
    assert bound, f"{name}: nothing listens on port {port}"
    assert bound <= LOOPBACK, f"{name} listens on {sorted(bound)}:{port}"
    with socket.create_connection(("127.0.0.1", port), timeout=10):
        pass
    for address in outside_addresses():
        try:
            with socket.create_connection((address, port), timeout=5):
                raise AssertionError(f"{name} accepts connections on {address}:{port}")
        except (ConnectionRefusedError, TimeoutError):
            continue


def listening_sockets(groups: set[int]) -> list[tuple[str, str]]:
    """(command, "ip:port") of every TCP socket that listens in a process of one of the process ``groups``."""
    import os

    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) in groups:
                found += [(" ".join(proc.cmdline())[:100], f"{c.laddr.ip}:{c.laddr.port}")
                          for c in proc.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN]
        except (psutil.Error, ProcessLookupError):
            continue
    return found


def command_lines_holding(secret: str) -> list[str]:
    """The command lines (of every process on the host) that contain ``secret``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and secret.encode() in (proc / "cmdline").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ")[:120].decode(errors="replace"))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def readme_block(path: Path, heading: str, language: str) -> str:
    """The first ```language code block under ``heading`` (a Markdown heading line) of ``path``."""
    section = path.read_text().split(f"\n{heading}\n", 1)[1]
    found = re.search(rf"```{language}\n(.*?)```", section, flags=re.S)
    assert found, f"no {language} block under {heading!r} in {path}"
    return found.group(1)


def jwt_signed_with(token: str, key: str) -> bool:
    """Whether an HS256 JSON Web Token's signature is ``key``'s (Flask-JWT-Extended signs with ``SECRET_KEY``)."""
    header_payload, _, signature = token.rpartition(".")
    expected = hmac.new(key.encode(), header_payload.encode(), hashlib.sha256).digest()
    return hmac.compare_digest(base64.urlsafe_b64encode(expected).rstrip(b"=").decode(), signature)


def superset_default_secret_key(venv: Path) -> str:
    """Superset's own default ``SECRET_KEY`` (``CHANGE_ME_SECRET_KEY`` of ``superset/constants.py``)."""
    [config] = venv.glob("lib/python*/site-packages/superset/constants.py")
    found = re.search(r'^CHANGE_ME_SECRET_KEY = "([^"]+)"', config.read_text(), flags=re.M)
    assert found, f"no CHANGE_ME_SECRET_KEY in {config}"
    return found.group(1)
