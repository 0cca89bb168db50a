"""``datagen`` at run time: generated rows, deterministic per row number so a replay regenerates them.

Every column is a pure function of the row number ``n`` (``sequence``: ``start + n``; ``random``: a hash of
``n`` and the column position scaled into ``[min, max]``), so a batch replayed after a failure produces the
same rows and exactly-once sinks stay exact.

* Unbounded (no ``number-of-rows`` and no sequence field): Spark's ``rate`` source paced at
  ``rows-per-second``; its ``value`` is ``n`` and its ``timestamp`` feeds random timestamps.
* Bounded: the rows are generated once into ``<job root>/inputs/<uid>/`` (files of at most
  ``rows-per-second`` rows, written atomically, never rewritten, so restored runs see the same files and
  skip what they already read) and streamed from there one file per batch; once read, the query is idle.
"""

from __future__ import annotations

import math
import os
import shutil
from typing import Any

from planengine.ir.types import Kind
from planengine.runtime.connectors import SourceFrame, source_reader
from planengine.runtime.dataflow.expressions import render_spark_type

_INTEGRAL_RANGE = {Kind.TINYINT: (-128, 127), Kind.SMALLINT: (-32768, 32767), Kind.INT: (-(2**31), 2**31 - 1),
                   Kind.BIGINT: (-(2**62), 2**62)}
_MODULUS = 2**61 - 1


def _hash(n: Any, seed: int) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    return F.pmod(F.xxhash64(n, F.lit(seed)), F.lit(_MODULUS))


def column_for(gen: Any, position: int, n: Any, now: Any) -> Any:
    """The Spark column generating ``gen``'s values from row number ``n`` (and the row's time ``now``)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    t = gen.type
    spark_type = render_spark_type(t.with_nullable(True) if hasattr(t, "with_nullable") else t)
    seed = 7919 * (position + 1)
    if gen.kind == "sequence":
        start = int(gen.start or 0)
        value = F.lit(start) + n
        col = value.cast("string") if t.is_string else value
    elif t.kind is Kind.BOOLEAN:
        col = (_hash(n, seed) % 2) == 0
    elif t.is_integral or t.kind is Kind.DECIMAL:
        lo, hi = _INTEGRAL_RANGE.get(t.kind, (0, 10**6))
        lo = int(gen.min) if gen.min is not None else lo
        hi = int(gen.max) if gen.max is not None else hi
        col = F.lit(lo) + (_hash(n, seed) % F.lit(hi - lo + 1))
    elif t.is_numeric:
        lo = float(gen.min) if gen.min is not None else 0.0
        hi = float(gen.max) if gen.max is not None else 1.0
        col = F.lit(lo) + (_hash(n, seed) / F.lit(float(_MODULUS))) * F.lit(hi - lo)
    elif t.is_string or t.kind in (Kind.BINARY, Kind.VARBINARY):
        length = int(gen.length or 100)
        text = F.sha2(F.xxhash64(n, F.lit(seed)).cast("string"), 256)
        col = F.substring(F.repeat(text, math.ceil(length / 64)), 1, length)
    elif t.is_timestamp or t.kind is Kind.DATE:
        past_ms = int(gen.max_past_ms or 0)
        offset = (_hash(n, seed) % F.lit(past_ms + 1)) if past_ms else F.lit(0)
        col = F.timestamp_millis(F.unix_millis(now) - offset)
    else:
        col = F.lit(None)
    if gen.null_rate:
        col = F.when((_hash(n, seed + 1) % 10000) < F.lit(int(gen.null_rate * 10000)), F.lit(None)).otherwise(col)
    return col.cast(spark_type).alias(gen.column)


def _row_count(source: Any) -> int | None:
    counts = [source.number_of_rows] if source.number_of_rows is not None else []
    for g in source.generators():
        if g.kind == "sequence":
            counts.append(max(0, int(g.end if g.end is not None else 2**31 - 1) - int(g.start or 0) + 1))
    return min(counts) if counts else None


@source_reader("datagen")
def read_datagen(source: Any, ctx: Any, node: Any) -> SourceFrame:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    spark = ctx.spark
    gens = source.generators()
    count = _row_count(source)
    rps = int(source.rows_per_second)
    if count is None:
        raw = (spark.readStream.format("rate").option("rowsPerSecond", rps)
               .option("numPartitions", 2).load())
        df = raw.select(*[column_for(g, i, F.col("value"), F.col("timestamp")) for i, g in enumerate(gens)])
        return SourceFrame(df, bounded=False)
    directory = _materialize(spark, source, ctx, node, count, rps)
    raw = (spark.readStream.format("parquet").schema("value BIGINT, ts TIMESTAMP")
           .option("maxFilesPerTrigger", 1).load(directory))
    df = raw.select(*[column_for(g, i, F.col("value"), F.col("ts")) for i, g in enumerate(gens)])
    return SourceFrame(df, bounded=True)


def _materialize(spark: Any, source: Any, ctx: Any, node: Any, count: int, rps: int) -> str:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    base = os.path.join(str(ctx.inputs_root), "inputs")
    directory = os.path.join(base, ctx.uid(node, "source"))
    if os.path.isdir(directory):
        return directory
    tmp = directory + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    files = max(1, min(1000, math.ceil(count / max(1, rps))))
    (spark.range(0, count, 1, files).select(F.col("id").alias("value"), F.current_timestamp().alias("ts"))
     .write.parquet(tmp))
    for name in os.listdir(tmp):
        if not name.endswith(".parquet"):
            os.remove(os.path.join(tmp, name))
    os.replace(tmp, directory)
    return directory
