"""Flink logical types as Spark SQL type names.

The mapping lives in one place because both the function renderers (``CAST``, result casts that pin a
Spark result to the Flink type) and the runtime's expression renderer need it. The notable choice:
Flink ``TIMESTAMP`` has no zone, which is Spark's ``TIMESTAMP_NTZ``; Flink ``TIMESTAMP_LTZ`` is an
instant shown in the session zone, which is Spark's plain ``TIMESTAMP``.

>>> from planengine.ir.types import parse_type
>>> render_spark_type(parse_type("ROW<`a` TIMESTAMP(3), `b` MAP<STRING, DECIMAL(10, 2)>>"))
'STRUCT<`a`: TIMESTAMP_NTZ, `b`: MAP<STRING, DECIMAL(10,2)>>'
"""

from __future__ import annotations

from sqlglot import exp

from planengine.errors import ValidationError
from planengine.ir.types import DataType, Kind

_SIMPLE = {
    Kind.BOOLEAN: "BOOLEAN",
    Kind.TINYINT: "TINYINT",
    Kind.SMALLINT: "SMALLINT",
    Kind.INT: "INT",
    Kind.BIGINT: "BIGINT",
    Kind.FLOAT: "FLOAT",
    Kind.DOUBLE: "DOUBLE",
    # Spark has no length-limited strings at runtime; CHAR/VARCHAR semantics (padding, truncation) are
    # applied by the CAST renderer, not by the storage type.
    Kind.CHAR: "STRING",
    Kind.VARCHAR: "STRING",
    Kind.BINARY: "BINARY",
    Kind.VARBINARY: "BINARY",
    Kind.DATE: "DATE",
    Kind.TIMESTAMP: "TIMESTAMP_NTZ",
    Kind.TIMESTAMP_LTZ: "TIMESTAMP",
    Kind.INTERVAL_DAY_TIME: "INTERVAL DAY TO SECOND",
    Kind.INTERVAL_YEAR_MONTH: "INTERVAL YEAR TO MONTH",
    Kind.NULL: "VOID",
}


def render_spark_type(t: DataType) -> str:
    """Spark SQL type text for a Flink type (nullability is not part of a Spark type name)."""
    k = t.kind
    if k in _SIMPLE:
        return _SIMPLE[k]
    if k is Kind.DECIMAL:
        return f"DECIMAL({t.precision},{t.scale})"
    if k is Kind.TIME:
        return f"TIME({t.precision})"
    if k is Kind.ARRAY and t.element is not None:
        return f"ARRAY<{render_spark_type(t.element)}>"
    if k is Kind.MULTISET and t.element is not None:
        # Flink's MULTISET is a bag: element -> multiplicity, exactly a Spark map to INT.
        return f"MAP<{render_spark_type(t.element)}, INT>"
    if k is Kind.MAP and t.key is not None and t.value is not None:
        return f"MAP<{render_spark_type(t.key)}, {render_spark_type(t.value)}>"
    if k is Kind.ROW:
        fields = ", ".join("`" + f.name.replace("`", "``") + f"`: {render_spark_type(f.type)}" for f in t.fields)
        return f"STRUCT<{fields}>"
    raise ValidationError(f"type {t} has no Spark representation")


def spark_data_type(t: DataType) -> exp.Expression:
    """The sqlglot node for ``CAST(... AS <t>)`` in Spark's dialect.

    TIME is emitted as raw text because sqlglot's Spark dialect would rewrite it to TIMESTAMP.
    """
    if t.kind is Kind.TIME:
        return exp.Var(this=render_spark_type(t))
    if t.kind is Kind.NULL:
        return exp.Var(this="VOID")
    return exp.DataType.build(render_spark_type(t), dialect="spark")
