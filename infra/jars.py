"""Fetch Tidewater's JVM jars with Maven (infra/pom.xml) into .cache/jars, once."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from lakehouse import naming
from lakehouse.errors import ServiceError

INFRA = Path(__file__).resolve().parent
# jars an older infra/pom.xml put into .cache/jars and the current one replaces (every jar of a set
# goes on the classpath, so a stale one would load beside its replacement)
RETIRED_JARS = (("spark", "tidewater-kafka-token-shim-*.jar"),)  # now spark-token-provider-kafka-0-10


def jars_ready() -> bool:
    spark = naming.jars_dir("spark")
    return (
        any(spark.glob("delta-spark_*.jar")) and any(spark.glob("spark-sql-kafka-*.jar"))
        and any(spark.glob("spark-token-provider-kafka-0-10_*.jar"))
        and any(naming.jars_dir("kafka").glob("kafka_2.13-*.jar"))
        and any(naming.jars_dir("metastore").glob("derbynet-*.jar"))
        and any(naming.jars_dir("hive").glob("hive-llap-common-*.jar"))
    )


def fetch_jars(force: bool = False) -> bool:
    """Run ``mvn package`` on infra/pom.xml unless the jars are already cached. True if it ran."""
    if jars_ready() and not force:
        return False
    for jar_set, pattern in RETIRED_JARS:
        for jar in naming.jars_dir(jar_set).glob(pattern):
            jar.unlink()
    if not shutil.which("mvn"):
        raise ServiceError("setup: 'mvn' not found; install Maven (apt-get install maven) and retry")
    cmd = ["mvn", "-B", "-q", "-s", str(INFRA / "maven" / "settings.xml"), "-f", str(INFRA / "pom.xml"), "package"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join(result.stdout.splitlines()[-15:])
        raise ServiceError(f"setup: Maven could not fetch the jars:\n{tail}")
    return True


JAVA_SOURCES = INFRA / "java"  # Tidewater's own JVM classes (the Thrift server's serving redirect)


def pyspark_jars_dir() -> Path:
    """The jars of the installed pyspark distribution (Spark, Hive 2.3.10, Derby, ...)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def tidewater_jar() -> Path:
    return naming.jars_dir("tidewater") / "tidewater-spark.jar"


def build_tidewater_jar() -> Path:
    """Compile infra/java into ``tidewater_jar()`` unless it is newer than every source. Compiled with the
    JDK's ``javac`` against pyspark's own jars (the exact classes it runs with; nothing to download),
    into a temporary folder first, so two commands building at once never load half a jar."""
    jar = tidewater_jar()
    sources = sorted(JAVA_SOURCES.rglob("*.java"))
    if jar.exists() and jar.stat().st_mtime >= max(s.stat().st_mtime for s in sources):
        return jar
    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if not javac or not jar_tool:
        raise ServiceError("setup: 'javac' or 'jar' not found; install a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    class_path = str(pyspark_jars_dir() / "*")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as work:
        steps = [[javac, "--release", "17", "-nowarn", "-cp", class_path, "-d", f"{work}/classes", *map(str, sources)],
                 [jar_tool, "cf", f"{work}/built.jar", "-C", f"{work}/classes", "."]]
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True)
            if result.returncode != 0:
                raise ServiceError(f"setup: could not build {jar.name}:\n{result.stderr[-2000:]}")
        os.replace(f"{work}/built.jar", jar)
    return jar
