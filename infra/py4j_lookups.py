"""Fewer py4j round trips per DataFrame call: what a streaming micro-batch's Python planning costs.

A micro-batch of the speed job builds its DataFrames in Python, one py4j round trip per JVM call.
Two of PySpark's own habits multiply those calls (counted on one micro-batch's planning: 1,988 calls,
766 without them; 175-212 ms instead of 254-350 ms on 2 cores, ``docs/performance.md``):

* PySpark looks classes up by their simple name (``PythonUtils`` for every ``select`` of several
  columns, ``PythonSQLUtils``...) and py4j resolves such a name through PySpark's star imports in turn:
  every package tried before the right one is a failed class load, a search of every jar on the
  class path. ``import_pyspark_classes`` imports them by their full names, which py4j tries first.
* every PySpark function call also sends its Python call site to the JVM (several more round trips:
  ``PySparkCurrentOrigin``, ``getActiveSession``, a conf read), for error messages that name the user's
  line; ``DEBUGGING_OFF`` turns that off (a static setting: it goes into the session's conf when the
  JVM starts).

Our own code looks a JVM class up with ``jvm_class``: one round trip, where ``spark._jvm.org.apache...``
takes one per package level, each first tried as a class through those star imports.
"""

from __future__ import annotations

from typing import Any

DEBUGGING_OFF = {"spark.python.sql.dataFrameDebugging.enabled": "false"}
SIMPLE_NAMES = ("org.apache.spark.api.python.PythonUtils", "org.apache.spark.api.python.PythonRDD",
                "org.apache.spark.api.python.SerDeUtil", "org.apache.spark.sql.api.python.PythonSQLUtils")


def import_pyspark_classes(jvm: Any) -> None:
    """Import the classes that PySpark looks up by simple name, by their full names, into ``jvm``
    (PySpark's JVM view; idempotent)."""
    from py4j.java_gateway import java_import

    for name in SIMPLE_NAMES:
        java_import(jvm, name)


def jvm_class(spark: Any, name: str) -> Any:
    """The JVM class ``name`` (fully qualified) of ``spark``'s JVM, in one py4j round trip."""
    return getattr(spark._jvm, name)
