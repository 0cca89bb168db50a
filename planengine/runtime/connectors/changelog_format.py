"""Row kinds on files: the ``changelog-json`` ``op`` field and Debezium envelopes ⇄ ``_rowkind``.

``changelog-json`` stores ``_rowkind`` verbatim in ``op`` (``+I``, ``-U``, ``+U``, ``-D``). Debezium JSON
(``{"before", "after", "op"}``) maps as Flink's decoder does: ``c``/``r`` → ``+I`` after; ``u`` → ``-U``
before and ``+U`` after; ``d`` → ``-D`` before. Its encoder writes ``+I``/``+U`` as ``c`` with ``after``
and ``-U``/``-D`` as ``d`` with ``before``.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import ROWKIND

OP_FIELD = "op"


def encode_changelog_json(df: Any, columns: list[str]) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    return df.select(*[F.col(f"`{c}`") for c in columns], F.col(ROWKIND).alias(OP_FIELD))


def debezium_schema(schema_ddl: str) -> str:
    struct = "STRUCT<" + schema_ddl.replace("` ", "`: ") + ">"
    return f"before {struct}, after {struct}, op STRING"


def decode_debezium(df: Any, columns: list[str]) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    def image(side: str, kind: str) -> Any:
        return F.struct(F.col(side).alias("row"), F.lit(kind).alias("kind"))

    events = F.when(F.col("op").isin("c", "r"), F.array(image("after", "+I"))).when(
        F.col("op") == "u", F.array(image("before", "-U"), image("after", "+U"))).when(
        F.col("op") == "d", F.array(image("before", "-D"))).otherwise(F.array())
    exploded = df.select(F.explode(events).alias("e")).filter(F.col("e.row").isNotNull())
    return exploded.select(*[F.col("e.row").getField(c).alias(c) for c in columns], F.col("e.kind").alias(ROWKIND))


def encode_debezium(df: Any, columns: list[str]) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    row = F.struct(*[F.col(f"`{c}`") for c in columns])
    adds = F.col(ROWKIND).isin("+I", "+U")
    return df.select(F.when(adds, F.lit(None)).otherwise(row).alias("before"),
                     F.when(adds, row).otherwise(F.lit(None)).alias("after"),
                     F.when(adds, F.lit("c")).otherwise(F.lit("d")).alias("op"))
