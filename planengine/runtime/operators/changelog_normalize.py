"""Changelog normalize (Flink's ``ProcTimeDeduplicateKeepLastRowFunction`` on a changelog).

An upsert input (``+I``/``+U`` by unique key, ``-D`` possibly carrying only the key) becomes a full
changelog with before-images. State ``latestRow`` — ValueState ``(row STRING, ts BIGINT)``: the key's
current row as JSON.

* ``+I``/``+U``: unknown key → ``+I row``; a row equal to the state → nothing (unless state TTL is on);
  else ``-U old`` (when ``generateUpdateBefore``) and ``+U row``.
* ``-D``: known key → ``-D old`` (the stored full row, so key-only deletes work); unknown key → nothing.
* ``-U`` is dropped: a retract source with duplicate events sends ``-U old, +U new`` and the ``+U``
  alone produces the right pair from state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.ir.types import DataType
from planengine.runtime.operators._tws import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    ChangelogProcessor,
    Record,
    run_keyed,
)
from planengine.runtime.operators.state_codec import decode_row

ROW_SCHEMA = "row STRING, ts BIGINT"


class ChangelogNormalizeProcessor(ChangelogProcessor):
    def __init__(self, *, in_columns: Sequence[str], in_types: Sequence[DataType], in_updating: bool,
                 generate_update_before: bool, ttl_ms: int = 0, state_name: str = "latestRow"):
        super().__init__(in_columns, in_types, in_updating, in_types, ttl_ms)
        self.generate_update_before = generate_update_before
        self.state_name = state_name

    def open(self, handle: Any) -> None:
        self.state = handle.getValueState(self.state_name, ROW_SCHEMA)

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        stored = self.state.get() if self.state.exists() else None
        prev = decode_row(stored[0]) if stored is not None and not self.expired(stored[1]) else None
        start, out = prev, []
        for kind, row in records:
            if kind == UPDATE_BEFORE:
                continue
            if kind == DELETE:
                if prev is not None:
                    out.append((DELETE, prev))
                    prev = None
                continue
            if prev is None:
                out.append((INSERT, row))
            elif prev != row or self.ttl_ms:
                if self.generate_update_before:
                    out.append((UPDATE_BEFORE, prev))
                out.append((UPDATE_AFTER, row))
            prev = row
        if prev is None:
            if stored is not None:
                self.state.clear()
        elif prev is not start or stored is None or out:
            self.state.update((self.encode_state(prev), self.now))
        return out


def changelog_normalize(stream: Any, node: Any, ctx: Any) -> Any:
    """``stream-exec-changelog-normalize``: keyed by the unique key columns."""
    types = node.field_types
    processor = ChangelogNormalizeProcessor(
        in_columns=stream.columns, in_types=types, in_updating=stream.updating,
        generate_update_before=node.generate_update_before, ttl_ms=ctx.state_ttl_ms(node),
        state_name=type(node).STATE_NAMES[0])
    keys = [stream.columns[i] for i in node.unique_keys]
    return run_keyed(stream, stream.df, keys, processor, node.field_names, types)
