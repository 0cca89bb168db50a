"""``blackhole`` at run time: Spark's ``noop`` sink (the query runs, nothing is written)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.connectors import QueryOptions, sink_writer
from planengine.runtime.stream import output_mode


@sink_writer("blackhole")
def write_blackhole(stream: Any, sink: Any, node: Any, ctx: Any, query: QueryOptions) -> Any:
    return query.configure(stream.df.writeStream.format("noop").outputMode(output_mode(stream))).start()
