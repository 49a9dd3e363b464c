"""Where Tidewater finds ``java``: the one check in front of every JVM it starts.

The metastore and Kafka run ``java`` directly; Spark sessions, ``spark-submit`` (Thrift server, beeline)
and the detached speed jobs go through Spark's launcher, which takes ``$JAVA_HOME/bin/java`` when
``JAVA_HOME`` is set and ``java`` from ``PATH`` otherwise. ``require_java`` applies the same rule and
turns a missing JVM into one line naming the fix, before anything is spawned.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lakehouse.errors import ConfigError, TidewaterError

INSTALL = "install a JDK 17 ('make system-deps' runs infra/install_system_deps.sh) and put its bin folder on PATH"


def require_java() -> str:
    """The ``java`` executable every Tidewater JVM uses; a one-line error when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if not (java.is_file() and os.access(java, os.X_OK)):
            raise ConfigError("JAVA_HOME", home, "a JDK 17 folder with bin/java; set JAVA_HOME to one, "
                              "or unset it to use java from PATH")
        return str(java)
    found = shutil.which("java")
    if not found:
        raise TidewaterError(f"java was not found on PATH and JAVA_HOME is unset; {INSTALL} "
                             "or set JAVA_HOME to it")
    return found
