"""Time zone rules: every Tidewater process computes in UTC, whatever the host's zone.

PySpark's ``collect()`` turns a timestamp into a *naive* ``datetime`` in the Python process's
local zone, and ``createDataFrame`` reads a naive ``datetime`` back in that same zone. Spark SQL
itself runs in UTC (``spark.sql.session.timeZone``). A naive value formatted into a SQL literal is
therefore shifted by the host's UTC offset unless the process's local zone is UTC (measured under
``TZ=Asia/Kolkata``: duplicate MERGE rows, hidden serving windows, early finality).

The rules, each owned here:

* :func:`pin_process_to_utc` makes the Python process's local zone UTC before the first Spark
  session exists (``infra.spark_session.get_spark`` calls it); the driver JVM gets
  ``-Duser.timezone=UTC``. ``TZ=UTC`` stays in the environment (``mktime`` re-reads it); children inherit it.
* :func:`sql_timestamp` writes an instant as a literal with an explicit ``+00:00`` offset, so the
  literal means the same instant whatever the session zone.
* :func:`utc_now` is an aware UTC ``datetime`` (PySpark converts aware values correctly).
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

JVM_FLAG = "-Duser.timezone=UTC"
# Where a pinned process keeps its host's zone, for reports: a fact of one process, not a setting (Airflow's
# processes do not inherit it, so its presence never reads as changed settings).
HOST_ZONE_ENV = "TIDEWATER_HOST_TZ"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # the instant Spark's windows and unix_micros count from


def pin_process_to_utc() -> None:
    """Make this process's local zone UTC (idempotent), and keep ``TZ=UTC`` in its environment.

    The variable must stay: glibc's ``mktime`` (``time.mktime``, PySpark's conversion of a naive
    ``datetime`` in ``createDataFrame``) re-reads ``TZ`` on every call. Restoring the host's zone in the
    environment after ``tzset`` (as this function once did) flipped the process back to the host zone at
    the first ``createDataFrame`` with a naive timestamp: a batch cutoff collected in UTC was then stored
    and read as host-local time (13 h 45 min early under Pacific/Chatham; the randomized test caught it).
    Children inherit ``TZ=UTC``; the host's zone is kept in ``TIDEWATER_HOST_TZ`` for reports."""
    if os.environ.get("TZ") == "UTC" and time.timezone == 0 and time.altzone == 0:
        return
    if HOST_ZONE_ENV not in os.environ:
        os.environ[HOST_ZONE_ENV] = os.environ.get("TZ", "")
    os.environ["TZ"] = "UTC"
    time.tzset()


def as_utc(value: datetime) -> datetime:
    """An aware UTC datetime. A naive value is read as this process's local time, which is what
    PySpark's ``collect()`` returns."""
    return value.astimezone(UTC)


def aware_in_utc(value: datetime, taker: str) -> datetime:
    """An aware ``value`` in UTC; a naive one is refused (it would be read in the host's zone). ``taker``
    names the code that takes it, for the error."""
    if value.tzinfo is None:
        raise ValueError(f"{taker} takes a timezone-aware datetime, not the naive {value}: use infra.utc.as_utc")
    return value.astimezone(UTC)


def sql_timestamp(value: datetime) -> str:
    """A Spark SQL ``TIMESTAMP`` literal for the instant ``value``, with an explicit offset."""
    return f"TIMESTAMP '{as_utc(value).strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"


def utc_now() -> datetime:
    return datetime.now(UTC)
