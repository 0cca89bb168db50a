"""OVER aggregates ordered by a non-time column: ``SUM(v) OVER (PARTITION BY k ORDER BY v RANGE BETWEEN UNBOUNDED
PRECEDING AND CURRENT ROW)`` over an append or retract stream (Flink's NonTimeRangeUnboundedPrecedingFunction).

Per partition the rows are kept sorted by the order key (arrival order among peers) with the aggregate
values last emitted for each, in the value state ``accumulators`` — ``(rows STRING, seq BIGINT, ts BIGINT)``,
JSON ``[[seq, row, values], …]``. For every input record, in arrival order:

* an accumulating row (``+I``/``+U``) is emitted with its kind and the aggregate over every row whose order
  key is not after its own (itself and the peers already there included);
* a retracting row (``-U``/``-D``) is emitted with its kind and the values it was last emitted with, then
  removed;
* then every row whose order key is strictly after it gets its aggregate recomputed over the rows up to and
  including its own peers, emitted as ``-U`` old / ``+U`` new when it changed. Peers of the record keep the
  values they were emitted with (Flink updates only the rows that follow).

Cost: each record recomputes the rows after it, as Flink does; the aggregates are re-evaluated over the
prefix (``window_aggs.evaluate``), so a partition of ``n`` rows costs O(n²) per record — fine for the
partitions OVER-by-value queries have, not for millions of rows in one partition.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from planengine.ir.types import DataType
from planengine.runtime.dataflow.stream import Stream, column_name
from planengine.runtime.operators._tws import (
    UPDATE_AFTER,
    UPDATE_BEFORE,
    ChangelogProcessor,
    Record,
    is_accumulate,
    run_keyed,
)
from planengine.runtime.operators.state_codec import decode
from planengine.runtime.operators.window_aggs import evaluate

STATE = "accumulators"
STATE_SCHEMA = "rows STRING, seq BIGINT, ts BIGINT"


class _OrderKey:
    """A comparable order-key value honouring ASC/DESC and NULLS FIRST/LAST."""

    __slots__ = ("ascending", "nulls_first", "value")

    def __init__(self, value: Any, ascending: bool, nulls_first: bool):
        self.value, self.ascending, self.nulls_first = value, ascending, nulls_first

    def _cmp(self, other: _OrderKey) -> int:
        a, b = self.value, other.value
        if a is None or b is None:
            if a is None and b is None:
                return 0
            return (-1 if self.nulls_first else 1) if a is None else (1 if self.nulls_first else -1)
        c = (a > b) - (a < b)
        return c if self.ascending else -c

    def __lt__(self, other: _OrderKey) -> bool:
        return self._cmp(other) < 0

    def __le__(self, other: _OrderKey) -> bool:
        return self._cmp(other) <= 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _OrderKey) and self._cmp(other) == 0

    def __hash__(self) -> int:
        return hash(self.value)


class NonTimeOverProcessor(ChangelogProcessor):
    def __init__(self, in_columns: Sequence[str], in_types: Sequence[DataType], in_updating: bool,
                 out_types: Sequence[DataType], order: tuple[int, bool, bool], aggregates: Sequence[Any],
                 ttl_ms: int = 0):
        super().__init__(in_columns, in_types, in_updating, out_types, ttl_ms)
        self.order, self.aggregates = order, tuple(aggregates)

    def open(self, handle: Any) -> None:
        self.state = handle.getValueState(STATE, STATE_SCHEMA)

    def _key(self, row: tuple[Any, ...]) -> _OrderKey:
        field, ascending, nulls_first = self.order
        return _OrderKey(row[field], ascending, nulls_first)

    def _values(self, entries: list[list[Any]], upto: int) -> list[Any]:
        frame = [e[1] for e in entries[:upto]]
        return [evaluate(a, frame) for a in self.aggregates]

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        stored = self.state.get() if self.state.exists() else None
        if stored is None or self.expired(stored[2]):
            entries, seq = [], 0
        else:
            entries = [[e[0], tuple(e[1]), list(e[2])] for e in decode(stored[0])]
            seq = int(stored[1])
        out: list[Record] = []
        for kind, row in records:
            keys = [self._key(e[1]) for e in entries]
            k = self._key(row)
            if is_accumulate(kind):
                at = bisect.bisect_right(keys, k)  # after the peers already there
                entries.insert(at, [seq, row, []])
                seq += 1
                entries[at][2] = self._values(entries, at + 1)
                out.append((kind, (*row, *entries[at][2])))
                after = bisect.bisect_right(keys, k) + 1
            else:
                at = next((i for i, e in enumerate(entries) if e[1] == row), None)
                if at is None:
                    continue  # retraction of a row never seen (e.g. expired by TTL)
                removed = entries.pop(at)
                out.append((kind, (*row, *removed[2])))
                after = bisect.bisect_right([self._key(e[1]) for e in entries], k)
            out.extend(self._refresh(entries, after))
        if entries:
            self.state.update((self.encode_state([[e[0], list(e[1]), e[2]] for e in entries]), seq, self.now))
        else:
            self.state.clear()
        return out

    def _refresh(self, entries: list[list[Any]], start: int) -> list[Record]:
        """Recompute the rows from ``start`` on (all after the record's order key), peers together."""
        out: list[Record] = []
        keys = [self._key(e[1]) for e in entries]
        i = start
        while i < len(entries):
            end = bisect.bisect_right(keys, keys[i])  # the frame reaches the last peer of entries[i]
            values = self._values(entries, end)
            for e in entries[i:end]:
                if e[2] != values:
                    out.append((UPDATE_BEFORE, (*e[1], *e[2])))
                    out.append((UPDATE_AFTER, (*e[1], *values)))
                    e[2] = values
            i = end
        return out


def non_time_over_aggregate(stream: Stream, partition_keys: Sequence[int], order_key: Any, aggregates: Sequence[Any],
                            in_types: Sequence[DataType], out_types: Sequence[DataType], fields: Sequence[str],
                            ttl_ms: int) -> Stream:
    nulls_first = order_key.ascending if order_key.nulls_first is None else order_key.nulls_first
    processor = NonTimeOverProcessor(stream.columns, in_types, stream.updating, out_types,
                                     (order_key.field, order_key.ascending, nulls_first), aggregates, ttl_ms)
    keys = [column_name(k) for k in partition_keys]
    return run_keyed(stream, stream.df, keys, processor, fields, out_types)
