"""Class data sharing for Spark driver JVMs: a dynamic CDS archive of the classes a Tidewater
driver loads (Spark, Hive client, Delta, Kafka source), mapped by every later driver JVM.

Every CLI command, speed job, job service, test module and benchmark baseline starts a driver JVM,
and most of its start is loading and verifying the same ~25,000 classes. Measured on 2 cores
(``get_spark`` + a Delta CREATE/INSERT/SELECT, three runs each): session 8.5-10.4 s without the
archive, 4.4-5.4 s with it; the whole probe 16.1-19.2 s against 9.7-12.0 s.

The archive is valid only for the JVM build and the class path it was dumped with (HotSpot checks
both and silently runs without it otherwise), so its file name carries a fingerprint of both:
``.cache/cds/<role>-<fingerprint>.jsa``. ``tidewater setup`` builds it (``tidewater/class_data_archive_build.py``);
until it exists drivers start without it, only slower. Warnings about a rejected archive are
switched off: a JVM's stdout is a command's stdout (``tidewater sql --json``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from infra.jars import pyspark_jars_dir
from lakehouse import naming

ARCHIVE_DIR = naming.cache_dir() / "cds"
DUMP_ENV = "TIDEWATER_JVM_ARCHIVE_DUMP"  # set by the builder: this JVM writes the archive at exit
QUIET = ["-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off", "-Xlog:class+path=off"]


def _pyspark_jars() -> list[Path]:
    return sorted(pyspark_jars_dir().glob("*.jar"))


def fingerprint(java: str, class_path: list[str]) -> str:
    """The JVM build (its ``release`` file, or the binary's size and time) and every jar the driver
    loads (path, size, modification time), in order."""
    home = Path(java).resolve().parent.parent
    release = home / "release"
    digest = hashlib.sha256(str(home).encode())
    digest.update(release.read_bytes() if release.is_file() else str(Path(java).resolve().stat()).encode())
    for entry in [*class_path, *map(str, _pyspark_jars())]:
        try:
            st = os.stat(entry)
            digest.update(f"{entry}|{st.st_size}|{int(st.st_mtime)}\n".encode())
        except OSError:
            digest.update(f"{entry}|missing\n".encode())
    return digest.hexdigest()[:16]


def archive_file(role: str, java: str, class_path: list[str]) -> Path:
    return ARCHIVE_DIR / f"{role}-{fingerprint(java, class_path)}.jsa"


def java_options(role: str, java: str, class_path: list[str]) -> list[str]:
    """The flags a driver JVM of ``role`` starts with: map the archive when it exists, write it at exit
    when the builder asks (``DUMP_ENV``), nothing otherwise."""
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return [f"-XX:ArchiveClassesAtExit={dump}"]
    archive = archive_file(role, java, class_path)
    return [f"-XX:SharedArchiveFile={archive}", *QUIET] if archive.is_file() else []
