"""Sink upsert materializer (Flink's ``SinkUpsertMaterializer``).

When a changelog reaches an upsert sink keyed differently from the changelog's own unique key, several
rows can be alive for one sink key; a retraction of a row that is not the latest one must not delete the
key. State ``materializedRows`` — ValueState ``(rows STRING, ts BIGINT)``: the JSON list of the rows alive
for the sink key, oldest first.

* ``+I``/``+U``: an identical row is replaced in place, otherwise appended; emit the row as ``+I`` when it
  is the only one, else ``+U``.
* ``-U``/``-D``: remove the first identical row; none left → ``-D row``; the latest row removed → ``+U``
  the new latest; an older one removed → nothing. A retraction of an unknown row is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.ir.types import DataType
from planengine.runtime.operators._tws import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    ChangelogProcessor,
    Record,
    is_accumulate,
    run_keyed,
)
from planengine.runtime.operators.state_codec import decode

ROWS_SCHEMA = "rows STRING, ts BIGINT"


class UpsertMaterializerProcessor(ChangelogProcessor):
    def __init__(self, *, in_columns: Sequence[str], in_types: Sequence[DataType], ttl_ms: int = 0,
                 state_name: str = "materializedRows"):
        super().__init__(in_columns, in_types, True, in_types, ttl_ms)
        self.state_name = state_name

    def open(self, handle: Any) -> None:
        self.state = handle.getValueState(self.state_name, ROWS_SCHEMA)

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        stored = self.state.get() if self.state.exists() else None
        rows: list[tuple[Any, ...]] = []
        if stored is not None and not self.expired(stored[1]):
            rows = [tuple(r) for r in decode(stored[0])]
        out: list[Record] = []
        for kind, row in records:
            if is_accumulate(kind):
                try:
                    rows[rows.index(row)] = row
                except ValueError:
                    rows.append(row)
                out.append((INSERT if len(rows) == 1 else UPDATE_AFTER, row))
                continue
            try:
                index = rows.index(row)
            except ValueError:
                continue  # already gone (state expired or never seen)
            last = len(rows) - 1
            del rows[index]
            if not rows:
                out.append((DELETE, row))
            elif index == last:
                out.append((UPDATE_AFTER, rows[-1]))
        if rows:
            self.state.update((self.encode_state(rows), self.now))
        elif stored is not None:
            self.state.clear()
        return out


def materialize(stream: Any, keys: Sequence[int], ctx: Any, node: Any) -> Any:
    """Upsert changes of ``stream`` keyed by the sink key columns ``keys`` (positions in the stream)."""
    types = node.inputs[0].field_types if node.inputs else None
    if types is None:
        raise ValueError("the upsert materializer needs the sink input's types")
    names = getattr(type(node), "STATE_NAMES", ()) or ("materializedRows",)
    processor = UpsertMaterializerProcessor(in_columns=stream.columns, in_types=types,
                                            ttl_ms=ctx.state_ttl_ms(node), state_name=names[0])
    return run_keyed(stream, stream.df, [stream.columns[k] for k in keys], processor, stream.fields, types)
