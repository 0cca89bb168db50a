"""Deduplicate (``ROW_NUMBER() … WHERE rn = 1``), Flink's four variants in one processor.

State ``keptRow`` — ValueState ``(row STRING, ts BIGINT)``: the row currently emitted for the key.

* proctime keep-first: the first row wins, later rows are dropped; the output is insert-only.
* proctime keep-last: every row replaces the kept one: ``+I`` first, then ``-U old`` (when
  ``generateUpdateBefore``) and ``+U new``.
* rowtime keep-first / keep-last: a row replaces the kept one when its rowtime (``orderField``) is
  smaller (keep-first) or not smaller (keep-last); replacements are emitted as updates, as Flink's
  ``RowTimeDeduplicateFunction`` does. Rows with a NULL rowtime never replace a kept row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.ir.types import DataType
from planengine.runtime.operators._tws import (
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    ChangelogProcessor,
    Record,
    is_accumulate,
    run_keyed,
)
from planengine.runtime.operators.state_codec import decode_row

ROW_SCHEMA = "row STRING, ts BIGINT"


class DeduplicateProcessor(ChangelogProcessor):
    def __init__(self, *, in_columns: Sequence[str], in_types: Sequence[DataType], in_updating: bool,
                 keep_last_row: bool, is_rowtime: bool, order_field: int, generate_update_before: bool,
                 ttl_ms: int = 0, state_name: str = "keptRow"):
        super().__init__(in_columns, in_types, in_updating, in_types, ttl_ms)
        self.keep_last_row = keep_last_row
        self.is_rowtime = is_rowtime
        self.order_field = order_field
        self.generate_update_before = generate_update_before
        self.state_name = state_name

    def open(self, handle: Any) -> None:
        self.state = handle.getValueState(self.state_name, ROW_SCHEMA)

    def _replaces(self, prev: tuple[Any, ...], row: tuple[Any, ...]) -> bool:
        if not self.is_rowtime:
            return self.keep_last_row
        t_new, t_old = row[self.order_field], prev[self.order_field]
        if t_new is None:
            return False
        if t_old is None:
            return True
        return t_new >= t_old if self.keep_last_row else t_new < t_old

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        stored = self.state.get() if self.state.exists() else None
        prev = decode_row(stored[0]) if stored is not None and not self.expired(stored[1]) else None
        changed, out = False, []
        for kind, row in records:
            if not is_accumulate(kind):
                continue  # Flink's deduplicate takes insert-only input
            if prev is None:
                out.append((INSERT, row))
            elif self._replaces(prev, row):
                if self.generate_update_before:
                    out.append((UPDATE_BEFORE, prev))
                out.append((UPDATE_AFTER, row))
            else:
                continue
            prev, changed = row, True
        if prev is not None and (changed or self.ttl_ms):
            self.state.update((self.encode_state(prev), self.now))
        return out


def deduplicate(stream: Any, node: Any, ctx: Any) -> Any:
    """``stream-exec-deduplicate``: keyed by the partition (unique key) columns."""
    types = node.field_types
    processor = DeduplicateProcessor(
        in_columns=stream.columns, in_types=types, in_updating=stream.updating, keep_last_row=node.keep_last_row,
        is_rowtime=node.is_rowtime, order_field=node.order_field,
        generate_update_before=node.generate_update_before, ttl_ms=ctx.state_ttl_ms(node),
        state_name=type(node).STATE_NAMES[0])
    keys = [stream.columns[i] for i in node.unique_keys]
    return run_keyed(stream, stream.df, keys, processor, node.field_names, types,
                     insert_only=node.changelog_mode.contains_only_inserts())
