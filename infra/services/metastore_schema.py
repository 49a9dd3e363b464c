"""The Hive metastore schema in PostgreSQL, created once, whole, before any Spark process connects.

On Derby every Spark driver lets DataNucleus create the metastore tables when it first needs them
(``datanucleus.schema.autoCreateAll``). On PostgreSQL that deadlocks (measured): the first CREATE
TABLE holds a lock on ``TBLS`` in its transaction while DataNucleus, on a second connection, adds
``TBL_PRIVS``'s foreign key to ``TBLS`` and waits for it forever. So ``metastore.start`` creates every
table of Hive's JDO model (``package.jdo`` in pyspark's hive-metastore jar) first, with DataNucleus's
SchemaTool in a JVM of its own, from pyspark's own jars and the PostgreSQL JDBC driver. The settings,
password included, go in a 0600 properties file under ``secrets/``, never on the command line.
"""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

from infra.jars import fetch_jars, pyspark_jars_dir
from infra.jvm import require_java
from infra.services import postgres
from lakehouse import naming
from lakehouse.config import TidewaterConfig
from lakehouse.errors import ServiceError

PG_DRIVER = "org.postgresql.Driver"
PG_JAR_GLOB = "postgresql-*.jar"  # infra/maven/metastore/pom.xml
MARKER_TABLE = "TBL_PRIVS"  # among the last tables DataNucleus creates lazily: present = the schema is whole


def driver_jar() -> Path:
    """The PostgreSQL JDBC driver; fetched with Maven if an older jar cache lacks it."""
    found = sorted(naming.jars_dir("metastore").glob(PG_JAR_GLOB))
    if not found:
        fetch_jars(force=True)
        found = sorted(naming.jars_dir("metastore").glob(PG_JAR_GLOB))
    if not found:
        raise ServiceError("metastore: PostgreSQL JDBC driver missing in .cache/jars/metastore; run 'tidewater setup --force'")
    return found[-1]


def ensure_schema(cfg: TidewaterConfig) -> bool:
    """Create the metastore tables in the ``metastore`` database unless they exist. True if it ran."""
    rows = postgres.query(cfg, "metastore", "SELECT 1 FROM pg_tables WHERE tablename = %s", (MARKER_TABLE,))
    if rows:
        return False

    jars = pyspark_jars_dir()
    hive_metastore = sorted(jars.glob("hive-metastore-*.jar"))
    if not hive_metastore:
        raise ServiceError(f"metastore: no hive-metastore jar in {jars}")
    work = naming.secrets_dir(cfg) / "metastore-schema"
    work.mkdir(parents=True, exist_ok=True, mode=0o700)
    with zipfile.ZipFile(hive_metastore[-1]) as jar:
        (work / "package.jdo").write_bytes(jar.read("package.jdo"))
    props = work / "datanucleus.properties"
    settings = {
        "javax.jdo.PersistenceManagerFactoryClass": "org.datanucleus.api.jdo.JDOPersistenceManagerFactory",
        "javax.jdo.option.ConnectionURL": postgres.jdbc_url(cfg, "metastore"),
        "javax.jdo.option.ConnectionDriverName": PG_DRIVER,
        "javax.jdo.option.ConnectionUserName": cfg.postgres.user,
        "javax.jdo.option.ConnectionPassword": postgres.password(cfg),
        "datanucleus.storeManagerType": "rdbms",
        "datanucleus.identifierFactory": "datanucleus1",  # Hive's settings (HiveConf), so names match
        "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
    }
    fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.writelines(f"{key}={value.replace(chr(92), chr(92) * 2)}\n" for key, value in settings.items())
    argv = [require_java(), "-Xmx256m", *cfg.jvm_flags, "-cp", f"{jars}/*{os.pathsep}{driver_jar()}",
            "org.datanucleus.store.schema.SchemaTool", "-create", "-api", "JDO", "-props", str(props),
            str(work / "package.jdo")]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    finally:
        props.unlink(missing_ok=True)
    if result.returncode != 0 or "completed successfully" not in result.stdout + result.stderr:
        raise ServiceError(f"metastore: creating the schema in PostgreSQL failed:\n{(result.stdout + result.stderr)[-1500:]}")
    return True
