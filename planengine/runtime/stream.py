"""``Stream``: what a translated exec node hands to its consumers.

A stream is a streaming DataFrame whose columns are the node's output fields under positional internal
names ``f0, f1, …`` (Flink field names may repeat after joins and may not be valid Spark identifiers), plus
the hidden ``_rowkind`` column (``+I``/``-U``/``+U``/``-D``) **only** on updating edges (DESIGN §6). The
logical field names travel beside it for sinks and explanations.

A stream also says in which Spark output mode the query that ends in it must run
(``properties["output_mode"]``, read with ``output_mode``): ``append`` everywhere except downstream of a
native update-mode group aggregate (``operators/native_group_aggregate.py``), whose query must run in
``update`` mode. Sink writers pass it to ``DataStreamWriter.outputMode``; ``foreachBatch`` writers accept
either mode.

Between a per-record watermark assigner (``stream-exec-watermark-assigner_2``) and the first stateful
operator, a stream also carries the hidden ``_record_wm`` column (``record_watermark`` is True): the
watermark each row met inside its micro-batch (``operators/record_watermark.py``). Stateless translators keep
it (``hidden_columns``); stateful operators consume it and never emit it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

ROWKIND = "_rowkind"
RECORD_WATERMARK = "_record_wm"
OUTPUT_MODE = "output_mode"
APPEND, UPDATE = "append", "update"


def column_name(i: int) -> str:
    return f"f{i}"


def column_names(n: int) -> list[str]:
    return [column_name(i) for i in range(n)]


@dataclass(frozen=True)
class Stream:
    df: Any  # pyspark.sql.DataFrame (streaming)
    fields: tuple[str, ...]  # logical field names, in order; columns are f0..f{n-1}
    updating: bool = False  # True when df carries _rowkind
    # Column (f<i>) carrying event time with a Spark watermark defined on it, when there is one.
    rowtime: str | None = None
    # Free-form facts translators pass along (e.g. the source uid for "read once" sharing).
    properties: dict[str, Any] = field(default_factory=dict)
    # True when df carries _record_wm (the per-record watermark inside a micro-batch).
    record_watermark: bool = False

    @property
    def columns(self) -> list[str]:
        return column_names(len(self.fields))

    def with_df(self, df: Any, **changes: Any) -> Stream:
        return replace(self, df=df, **changes)


def hidden_columns(stream: Stream) -> list[str]:
    """The hidden columns a stateless translator must carry along: ``_rowkind``, ``_record_wm``."""
    return ([ROWKIND] if stream.updating else []) + ([RECORD_WATERMARK] if stream.record_watermark else [])


def output_mode(stream: Stream) -> str:
    """The Spark output mode the query writing ``stream`` must use (``append`` unless a translator said)."""
    return str(stream.properties.get(OUTPUT_MODE, APPEND))
