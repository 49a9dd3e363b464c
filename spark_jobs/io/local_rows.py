"""Rows the driver holds (run records, ``ops.stream_progress`` rows) as a DataFrame, without a Python worker.

PySpark's ``createDataFrame(list, schema)`` parallelizes the pickled rows as a Python RDD: every
evaluation of the frame (a Delta append evaluates it more than once) runs Python tasks, and each task
makes its worker re-read the directory of every zip and jar on its ``PYTHONPATH``
(``importlib.invalidate_caches`` in ``pyspark.worker_util.setup_spark_files``; the path holds
``spark-core``'s jar). In a speed job at 1,000 events/s its two Python workers took 6% of a core each,
for two progress rows per micro-batch (py-spy: 80% of their samples in that directory read).

``local_frame`` hands the rows over as one Arrow table instead (``createDataFrame(pyarrow.Table)``:
the JVM reads the Arrow stream and holds the rows as a local relation; no Python task). Instants are
read as ``createDataFrame`` reads them (an aware ``datetime`` at its offset, a naive one in this
process's zone: UTC, ``infra.utc.pin_process_to_utc``) and handed to Arrow as naive UTC: pyarrow
drops an aware value's offset once ``PYARROW_IGNORE_TIMEZONE`` is set, which importing
``pyspark.pandas`` does (a +05:30 instant came out 5 h 30 min late in the test suite).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


def _arrow_value(value: Any) -> Any:
    """An instant as a naive UTC ``datetime`` (a naive one read in this process's zone); others as they are."""
    return value.astimezone(UTC).replace(tzinfo=None) if isinstance(value, datetime) else value


def local_frame(spark: Any, rows: Sequence[Sequence[Any]], ddl: str) -> Any:
    """``rows`` (values in column order) as a DataFrame of the DDL schema ``ddl`` (``Contract.schema``)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_string

    schema = _parse_datatype_string(ddl)
    if not isinstance(schema, StructType):
        raise ValueError(f"local_frame: {ddl!r} is not a list of columns")

    arrow_schema = to_arrow_schema(schema)
    names = schema.names
    for row in rows:
        if len(row) != len(names):
            raise ValueError(f"local_frame: a row has {len(row)} values for the {len(names)} columns {names}")
    columns = [pa.array([_arrow_value(row[i]) for row in rows], type=arrow_schema.field(i).type)
               for i in range(len(names))]
    return spark.createDataFrame(pa.Table.from_arrays(columns, schema=arrow_schema), schema)
