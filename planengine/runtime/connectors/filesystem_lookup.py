"""A filesystem table as a lookup (dimension) table: the directory read whole, as a static DataFrame.

For **small** tables only: ``read_dimension`` is a bounded batch read of the table's directory with the
table's physical schema and format options (the same ones the streaming filesystem source uses; partition
columns come from ``k=v`` directories). The lookup-join translator broadcast-joins it to each micro-batch
of the probe stream (Spark's stream-static join). The files are listed when the query starts: files added
later are seen by the next run (a restart or a continued run), not by the running query.
"""

from __future__ import annotations

import os
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.connectors import spark_schema_ddl
from planengine.runtime.connectors.filesystem import _SPARK_FORMAT, _format_options, _local_dir


def read_dimension(spark: Any, source: Any) -> Any:
    """The table's rows with columns named as its physical columns, in table order."""

    fmt = source.format.identifier
    if fmt not in ("json", "csv", "parquet"):
        raise ValidationError(f"{source.identifier}: a '{fmt}' table cannot be a lookup table",
                              hint="use json, csv or parquet for dimension tables")
    physical = source.schema.physical_columns
    names = [c.name for c in physical]
    ddl = spark_schema_ddl(names, [c.type for c in physical])
    reader = spark.read.format(_SPARK_FORMAT[fmt]).schema(ddl)
    for key, value in _format_options(source.format, reading=True).items():
        reader = reader.option(key, value)
    path = source.path
    local = _local_dir(path)
    if local is not None:
        if os.path.isfile(local):
            reader = reader.option("pathGlobFilter", os.path.basename(local))
            path = os.path.dirname(local) or "."
        elif not os.path.isdir(local):
            # No files yet: an empty table (every lookup misses), as Flink's filesystem lookup does.
            return spark.createDataFrame([], ddl)
    return reader.load(path).select(*[f"`{n}`" for n in names])
