"""Time zone rules: every Tidewater process computes in UTC, whatever the host's zone.

PySpark's ``collect()`` turns a timestamp into a *naive* ``datetime`` in the Python process's
local zone, and ``createDataFrame`` reads a naive ``datetime`` back in that same zone. Spark SQL
itself runs in UTC (``spark.sql.session.timeZone``). A naive value formatted into a SQL literal is
therefore shifted by the host's UTC offset unless the process's local zone is UTC (measured under
``TZ=Asia/Kolkata``: duplicate MERGE rows, hidden serving windows, early finality).

The rules, each owned here:

* :func:`pin_process_to_utc` makes the Python process's local zone UTC before the first Spark
  session exists (``infra.spark_session.get_spark`` calls it); the driver JVM gets
  ``-Duser.timezone=UTC``. Children keep the host's ``TZ`` in their environment and pin themselves.
* :func:`sql_timestamp` writes an instant as a literal with an explicit ``+00:00`` offset, so the
  literal means the same instant whatever the session zone.
* :func:`utc_now` is an aware UTC ``datetime`` (PySpark converts aware values correctly).
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

JVM_FLAG = "-Duser.timezone=UTC"


def pin_process_to_utc() -> None:
    """Make this process's local zone UTC (idempotent). The ``TZ`` environment variable is restored
    afterwards, so subprocesses still see the host's zone (and pin themselves if they are ours)."""
    if time.timezone == 0 and time.altzone == 0 and time.tzname[0] in ("UTC", "GMT"):
        return
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved


def as_utc(value: datetime) -> datetime:
    """An aware UTC datetime. A naive value is read as this process's local time, which is what
    PySpark's ``collect()`` returns."""
    return value.astimezone(UTC)


def sql_timestamp(value: datetime) -> str:
    """A Spark SQL ``TIMESTAMP`` literal for the instant ``value``, with an explicit offset."""
    return f"TIMESTAMP '{as_utc(value).strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"


def utc_now() -> datetime:
    return datetime.now(UTC)
