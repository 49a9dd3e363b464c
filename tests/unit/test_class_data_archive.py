"""Which class-data-sharing flags a driver JVM gets: the archive of its exact JVM and class path, or none."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from infra import class_data_archive as jvm_archive

pytestmark = pytest.mark.unit


@pytest.fixture
def jar(tmp_path: Path) -> Path:
    path = tmp_path / "a.jar"
    path.write_bytes(b"x" * 10)
    return path


def test_the_fingerprint_follows_every_jar_and_the_jvm(jar: Path, tmp_path: Path) -> None:
    java = str(Path(os.environ.get("JAVA_HOME", "/usr")) / "bin" / "java")
    first = jvm_archive.fingerprint(java, [str(jar)])
    assert jvm_archive.fingerprint(java, [str(jar)]) == first
    jar.write_bytes(b"x" * 11)  # a re-fetched jar: the old archive no longer fits
    assert jvm_archive.fingerprint(java, [str(jar)]) != first
    assert jvm_archive.fingerprint(java, [str(jar), str(tmp_path / "b.jar")]) != jvm_archive.fingerprint(java, [str(jar)])


def test_options_map_the_archive_only_when_it_exists(jar: Path, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(jvm_archive, "ARCHIVE_DIR", tmp_path / "cds")
    monkeypatch.delenv(jvm_archive.DUMP_ENV, raising=False)
    java = "/usr/bin/java"
    assert jvm_archive.java_options("driver", java, [str(jar)]) == []
    archive = jvm_archive.archive_file("driver", java, [str(jar)])
    archive.parent.mkdir()
    archive.write_bytes(b"cds")
    flags = jvm_archive.java_options("driver", java, [str(jar)])
    assert flags[0] == f"-XX:SharedArchiveFile={archive}" and "-Xlog:cds=off" in flags
    assert jvm_archive.java_options("thrift", java, [str(jar)]) == []  # another role, another archive
    monkeypatch.setenv(jvm_archive.DUMP_ENV, str(tmp_path / "new.jsa"))
    assert jvm_archive.java_options("driver", java, [str(jar)]) == [f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}"]


def test_both_metastore_backends_give_one_class_path(tmp_path: Path, monkeypatch: Any) -> None:
    """The tests' one driver JVM starts on PostgreSQL (e2e) and serves Derby modules: with the configured
    driver first, its class path differed from the one the archive was built with, and it ran without."""
    from infra import spark_session

    derby, postgres = tmp_path / "derbyclient-10.16.1.1.jar", tmp_path / "postgresql-42.7.8.jar"
    derby.write_bytes(b"d")
    postgres.write_bytes(b"p")
    monkeypatch.setattr(spark_session.naming, "jars_dir", lambda kind: tmp_path)
    assert spark_session.metastore_drivers(str(derby)) == spark_session.metastore_drivers(str(postgres)) \
        == [str(derby), str(postgres)]
    assert spark_session.metastore_drivers("/opt/other/driver.jar") == ["/opt/other/driver.jar", str(derby), str(postgres)]
