"""``Stream``: what a translated exec node hands to its consumers.

A stream is a streaming DataFrame whose columns are the node's output fields under positional internal
names ``f0, f1, …`` (Flink field names may repeat after joins and may not be valid Spark identifiers), plus
the hidden ``_rowkind`` column (``+I``/``-U``/``+U``/``-D``) **only** on updating edges (DESIGN §6). The
logical field names travel beside it for sinks and explanations.

Beside the data, a stream carries typed ``StreamFacts`` that translators set and read (never a free-form
bag, so a misspelt key is a type error rather than a silently missing fact):

- ``output_mode``: the Spark output mode the query that ends in the stream must run in: ``append``
  everywhere except downstream of a native update-mode group aggregate
  (``operators/native_group_aggregate.py``), whose query must run in ``update`` mode. Sink writers pass it
  to ``DataStreamWriter.outputMode``; ``foreachBatch`` writers accept either mode.
- ``watermark``: the delay and interval of the watermark assigner upstream (and its node version), which a
  channel needs to re-derive event time on read-back and ``CURRENT_WATERMARK`` needs per row.
- ``stateful`` / ``event_time_output``: a stateful operator already runs in this query, and whether its
  output keeps event time (Spark chains such operators in append mode; the rest need a channel cut).

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
APPEND, UPDATE = "append", "update"


def column_name(i: int) -> str:
    return f"f{i}"


def column_names(n: int) -> list[str]:
    return [column_name(i) for i in range(n)]


@dataclass(frozen=True)
class WatermarkFacts:
    """What the nearest watermark assigner upstream declared (``stream-exec-watermark-assigner``)."""

    delay_ms: int
    interval_ms: int
    assigner_version: int


@dataclass(frozen=True)
class StreamFacts:
    """Facts about a stream that travel with it through stateless translators (see the module docstring)."""

    output_mode: str = APPEND
    watermark: WatermarkFacts | None = None
    stateful: bool = False
    event_time_output: bool = False

    @property
    def watermark_delay_ms(self) -> int:
        """The upstream watermark delay, 0 without an assigner (what a channel re-applies on read-back)."""
        return self.watermark.delay_ms if self.watermark is not None else 0


@dataclass(frozen=True)
class Stream:
    df: Any  # pyspark.sql.DataFrame (streaming)
    fields: tuple[str, ...]  # logical field names, in order; columns are f0..f{n-1}
    updating: bool = False  # True when df carries _rowkind
    # Column (f<i>) carrying event time with a Spark watermark defined on it, when there is one.
    rowtime: str | None = None
    facts: StreamFacts = field(default_factory=StreamFacts)
    # True when df carries _record_wm (the per-record watermark inside a micro-batch).
    record_watermark: bool = False
    # Set only on a sink translator's result: the ``SinkQuery`` (translators/sink.py) the executor starts.
    query: Any = None

    @property
    def columns(self) -> list[str]:
        return column_names(len(self.fields))

    @property
    def output_mode(self) -> str:
        """The Spark output mode the query writing this stream must use (``append`` unless a translator said)."""
        return self.facts.output_mode

    def with_df(self, df: Any, **changes: Any) -> Stream:
        return replace(self, df=df, **changes)


def hidden_columns(stream: Stream) -> list[str]:
    """The hidden columns a stateless translator must carry along: ``_rowkind``, ``_record_wm``."""
    return ([ROWKIND] if stream.updating else []) + ([RECORD_WATERMARK] if stream.record_watermark else [])
