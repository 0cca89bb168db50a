"""The input a JVM operator gets: the plan's types, positionally named, ``_rowkind`` last on updating edges.

The JVM operators read their input's Spark schema for the types of keys, values and state. Casting each field
to the Spark type of its plan type (where an upstream expression produced another) keeps the JVM's arithmetic
and state layout a function of the plan, not of how the input happened to be computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.functions.spark_types import render_spark_type
from planengine.ir.types import DataType
from planengine.runtime.dataflow.stream import ROWKIND, Stream


def spark_type(t: DataType) -> str:
    return render_spark_type(t)


def typed_input(stream: Stream, types: Sequence[DataType], extra: Sequence[Any] = ()) -> Any:
    """The stream's DataFrame: ``f0..fn`` cast to the Spark types of ``types`` where they differ, then
    ``_rowkind`` when the stream is updating, then the ``extra`` columns (computed over the stream's)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import _parse_datatype_string  # noqa: PLC0415 — pyspark is an optional extra

    df = stream.df
    columns = []
    for c, t in zip(stream.columns, types, strict=True):
        want = _parse_datatype_string(spark_type(t))
        have = df.schema[c].dataType
        columns.append(F.col(f"`{c}`") if have == want else F.col(f"`{c}`").cast(want).alias(c))
    if stream.updating:
        columns.append(F.col(ROWKIND))
    return df.select(*columns, *extra)
