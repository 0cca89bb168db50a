"""``print`` at run time: ``foreachBatch`` printing Flink-style rows (``+I[1, a]``), optionally prefixed.

Rows are printed on the driver in batch order; the run lock is checked before each batch is printed.
Values print as Flink's ``Row.toString`` does: ``null`` for nulls, ``2020-10-10T00:00:05`` timestamps.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from typing import Any

from planengine.runtime.connectors import BatchOptions, BatchWriter, QueryOptions, batch_sink_writer, sink_writer
from planengine.runtime.dataflow.stream import ROWKIND


def flink_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):  # java.time.LocalDateTime.toString
        text = f"{v:%Y-%m-%dT%H:%M}"
        if v.second or v.microsecond:
            text += f":{v.second:02d}"
        if v.microsecond:
            text += f".{v.microsecond // 1000:03d}" if v.microsecond % 1000 == 0 else f".{v.microsecond:06d}"
        return text + ("Z" if v.tzinfo is not None else "")
    if isinstance(v, list | tuple):
        return "[" + ", ".join(flink_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{flink_value(k)}={flink_value(x)}" for k, x in v.items()) + "}"
    if hasattr(v, "asDict"):
        return "+I[" + ", ".join(flink_value(x) for x in v) + "]"
    return str(v)


def flink_row(kind: str, values: list[Any]) -> str:
    return f"{kind}[" + ", ".join(flink_value(v) for v in values) + "]"


@sink_writer("print")
def write_print(stream: Any, sink: Any, node: Any, ctx: Any, query: QueryOptions) -> Any:
    emit = _printer(sink, stream.columns, stream.updating, query.fence)
    return query.configure(stream.df.writeStream.foreachBatch(emit).outputMode(stream.output_mode)).start()


@batch_sink_writer("print")
def print_batches(sink: Any, node: Any, ctx: Any, options: BatchOptions) -> BatchWriter:
    return lambda stream, batch_id: _printer(sink, stream.columns, stream.updating, options.fence)(stream.df,
                                                                                                   batch_id)


def _printer(sink: Any, columns: list[str], updating: bool, fence: Callable[[int], None]
             ) -> Callable[[Any, int], None]:
    prefix = sink.print_identifier
    out = sys.stderr if sink.standard_error else sys.stdout

    def emit(batch: Any, batch_id: int) -> None:
        fence(batch_id)
        for row in batch.toLocalIterator():
            kind = row[ROWKIND] if updating else "+I"
            line = flink_row(kind, [row[c] for c in columns])
            print(f"{prefix}> {line}" if prefix else line, file=out, flush=False)
        out.flush()

    return emit
