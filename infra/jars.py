"""Fetch Tidewater's JVM jars with Maven (infra/pom.xml) into .cache/jars, once."""

from __future__ import annotations

import shutil
import subprocess
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
