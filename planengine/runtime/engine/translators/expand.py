"""``stream-exec-expand``: GROUPING SETS' row multiplication, as one ``explode`` over an array of structs.

Every input row becomes one row per projection (keys outside the grouping set are NULL, ``$e`` names the
set). A single ``explode`` keeps it one stateless step, so the row kind of an updating input row travels with
each of its copies.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.expressions import render_spark_type
from planengine.runtime.dataflow.stream import Stream, column_name
from planengine.runtime.engine.translators import translator
from planengine.runtime.engine.translators.basic import _expr, _keep_hidden

_EXPANDED = "_expanded"


@translator("stream-exec-expand", 1)
def translate_expand(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    inp = inputs[0]
    types = [render_spark_type(t) for t in node.field_types]
    rows = [F.struct(*[_expr(e, inp.columns).cast(types[i]).alias(column_name(i)) for i, e in enumerate(project)])
            for project in node.projects]
    exploded = inp.df.select(F.explode(F.array(*rows)).alias(_EXPANDED), *_keep_hidden(inp))
    columns = [F.col(f"{_EXPANDED}.{column_name(i)}").alias(column_name(i)) for i in range(len(types))]
    return Stream(exploded.select(*columns, *_keep_hidden(inp)), tuple(node.field_names), inp.updating, None,
                  inp.facts, inp.record_watermark)
