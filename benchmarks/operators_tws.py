"""Throughput of the group aggregate: our Pandas TWS operator vs a Row TWS processor vs Spark's native
streaming aggregation (update mode; same result for insert-only COUNT/SUM), on this machine.

    .venv/bin/python benchmarks/operators_tws.py [--rows 200000] [--keys 1000]

Each variant reads JSON files as a stream; the first micro-batch warms the JVM and Python workers, the
second (same size, same keys: every key updates) is timed. Output: a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def write_batch(d: Path, name: str, rows: int, keys: int) -> None:
    with open(d / f"{name}.json", "w") as f:
        for i in range(rows):
            f.write(json.dumps({"k": i % keys, "v": i % 97}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=1000)
    args = ap.parse_args()

    import pandas as pd  # noqa: F401
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor

    from planengine.exec import nodes as X
    from planengine.ir import types as T
    from planengine.ir.aggregates import AggregateCall
    from planengine.ir.changelog import ALL
    from planengine.ir.types import parse_type
    from planengine.runtime.dataflow.stream import Stream
    from planengine.runtime.engine.context import TranslationContext
    from planengine.runtime.engine.session import get_spark
    from planengine.runtime.operators.group_aggregate import group_aggregate

    spark = get_spark()
    root = Path(tempfile.mkdtemp(prefix="bench-tws-"))

    class RowCountSum(StatefulProcessor):
        def init(self, handle):
            self.acc = handle.getValueState("accumulators", "n BIGINT, s BIGINT")

        def handleInputRows(self, key, rows, timerValues):
            n, s = self.acc.get() if self.acc.exists() else (0, 0)
            for r in rows:
                n += 1
                s += r.f1
            self.acc.update((n, s))
            yield Row(f0=key[0], f1=n, f2=s, _rowkind="+U")

        def close(self):
            pass

    def source(name: str):
        d = root / name
        d.mkdir()
        df = spark.readStream.schema("k BIGINT, v BIGINT").option("maxFilesPerTrigger", 1).json(str(d))
        return d, df.select(F.col("k").alias("f0"), F.col("v").alias("f1"))

    def pandas_tws(df):
        in_type = "ROW<k BIGINT, v BIGINT>"
        node = X.GroupAggregate(
            inputs=(X.Calc(inputs=(), output_type=parse_type(in_type), projection=()),),
            output_type=parse_type("ROW<k BIGINT, c BIGINT NOT NULL, s BIGINT>"), changelog_mode=ALL,
            grouping=(0,), aggregates=(AggregateCall("COUNT", 1, (), T.BIGINT.with_nullable(False), "c"),
                                       AggregateCall("SUM", 1, (1,), T.BIGINT, "s")),
            generate_update_before=False)
        ctx = TranslationContext(spark=spark, config={"table.exec.mini-batch.enabled": "true"},
                                 node_ids={id(node): 1})
        return group_aggregate(Stream(df, ("k", "v")), node, ctx).df, "append"

    def row_tws(df):
        return df.groupBy("f0").transformWithState(
            RowCountSum(), "f0 BIGINT, f1 BIGINT, f2 BIGINT, _rowkind STRING", "Append", "None"), "append"

    def native(df):
        return df.groupBy("f0").agg(F.count("*").alias("c"), F.sum("f1").alias("s")), "update"

    results = []
    for name, build in (("native aggregation (update mode)", native), ("TWS Pandas (group_aggregate)", pandas_tws),
                        ("TWS Row (count+sum processor)", row_tws)):
        d, df = source(name.split()[0] + name.split()[1])
        out, mode = build(df)
        q = (out.writeStream.outputMode(mode).format("noop")
             .option("checkpointLocation", str(root / f"ck-{d.name}")).start())
        write_batch(d, "0", args.rows, args.keys)
        q.processAllAvailable()
        write_batch(d, "1", args.rows, args.keys)
        t0 = time.perf_counter()
        q.processAllAvailable()
        dt = time.perf_counter() - t0
        q.stop()
        results.append((name, args.rows / dt, dt))
    shutil.rmtree(root, ignore_errors=True)
    print(f"| variant ({args.rows} rows/batch, {args.keys} keys, local[2]) | rows/s | batch seconds |")
    print("|---|---:|---:|")
    for name, rate, dt in results:
        print(f"| {name} | {rate:,.0f} | {dt:.2f} |")


if __name__ == "__main__":
    main()
