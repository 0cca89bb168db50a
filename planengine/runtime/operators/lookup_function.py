"""The lookup of a lookup join as an Arrow UDF: key columns in, the matching dimension rows out (an array).

For every Arrow batch of the probe stream (a micro-batch is split into batches of up to
``spark.sql.execution.arrow.maxRecordsPerBatch`` rows per partition), the UDF collects the distinct keys,
asks the connector's lookup function for all of them at once (``fn.lookup(keys) -> {key: [row, …]}``,
cached per Python process by the function itself) and returns, per probe row, the array of its dimension
rows as ``ARRAY<STRUCT<t0, t1, …>>`` in the table's column order. The translator then filters that array
with the join's remaining condition and explodes it (INNER) or explodes it keeping empty arrays as one
null row (LEFT), so the probe stream's own columns, watermark metadata included, are never rebuilt.

The UDF is non-deterministic (the dimension table changes), so Spark never folds or re-orders it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

from planengine.runtime.connectors.jdbc import coercer


class LookupFunction(Protocol):
    """Rows (already in the table's Spark types) per key; ``key_index``: key positions within a row."""

    key_index: list[int]

    def lookup(self, keys: Sequence[tuple]) -> dict[Hashable, list[tuple]]: ...


def field_name(i: int) -> str:
    return f"t{i}"


def candidates_type(row_schema: Any) -> Any:
    """``ARRAY<STRUCT<t0 …, t1 …>>`` for a dimension row schema (a pyspark StructType)."""
    from pyspark.sql import types as T  # noqa: PLC0415 — pyspark is an optional extra

    fields = [T.StructField(field_name(i), f.dataType, True) for i, f in enumerate(row_schema.fields)]
    return T.ArrayType(T.StructType(fields), containsNull=False)


def key_builder(parts: Sequence[tuple[str, Any]], coercers: Sequence[Callable[[Any], Any]]
                ) -> Callable[[list[list[Any]]], list[tuple]]:
    """Keys per row from the UDF's column arguments: ``parts[i]`` is ``("col", arg position)`` or
    ``("const", value)``; values are coerced to the dimension key column's Python type."""

    def build(columns: list[list[Any]]) -> list[tuple]:
        n = len(columns[0]) if columns else 0
        out = []
        for r in range(n):
            key = []
            for (kind, value), coerce in zip(parts, coercers):
                v = columns[value][r] if kind == "col" else value
                key.append(None if v is None else coerce(v))
            out.append(tuple(key))
        return out

    return build


def lookup_udf(fn: LookupFunction, parts: Sequence[tuple[str, Any]], row_schema: Any) -> Any:
    """The Arrow UDF; call it with ``struct(key columns…)`` (in ``parts``' ``col`` order, at least one)."""
    import pyarrow as pa  # noqa: PLC0415 — pyarrow (Spark extra) loads only on Spark
    from pyspark.sql.functions import arrow_udf  # noqa: PLC0415 — pyspark is an optional extra

    result_type = candidates_type(row_schema)
    coercers = [coercer(row_schema.fields[i].dataType) for i in fn.key_index]
    build_keys = key_builder(parts, coercers)
    names = [field_name(i) for i in range(len(row_schema.fields))]

    def run(packed: pa.Array) -> pa.Array:
        from pyspark.sql.pandas.types import to_arrow_type  # noqa: PLC0415 — pyspark is an optional extra

        columns = [packed.field(i).to_pylist() for i in range(packed.type.num_fields)]
        keys = build_keys(columns)
        found = fn.lookup(keys)
        out = []
        for key in keys:
            rows = found.get(key) or []
            out.append([dict(zip(names, row)) for row in rows])
        return pa.array(out, type=to_arrow_type(result_type))

    # Spark infers the UDF kind from real type hints (this module's annotations are strings).
    run.__annotations__ = {"packed": pa.Array, "return": pa.Array}
    return arrow_udf(run, result_type).asNondeterministic()
