"""``blackhole`` at run time: Spark's ``noop`` sink (the query runs, nothing is written; inside a shared query the
micro-batch's rows are still computed, so errors such as NOT NULL enforcement surface as they would)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.connectors import BatchOptions, BatchWriter, QueryOptions, batch_sink_writer, sink_writer


@sink_writer("blackhole")
def write_blackhole(stream: Any, sink: Any, node: Any, ctx: Any, query: QueryOptions) -> Any:
    return query.configure(stream.df.writeStream.format("noop").outputMode(stream.output_mode)).start()


@batch_sink_writer("blackhole")
def blackhole_batches(sink: Any, node: Any, ctx: Any, options: BatchOptions) -> BatchWriter:
    return lambda stream, batch_id: stream.df.write.format("noop").mode("overwrite").save()
