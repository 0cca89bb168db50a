"""Group aggregate with retraction (Flink's ``GroupAggFunction``) as a ``transformWithState`` processor.

State, per grouping key (names from ``GroupAggregate.STATE_NAMES``):

* ``accumulators`` — ValueState ``(acc STRING, ts BIGINT)``: JSON ``{"n": rows, "a": [acc…], "out": row}``;
  ``n`` counts accumulated minus retracted rows (``n`` = 0 deletes the group), ``out`` is the last emitted
  row (the before-image of the next update).
* ``distinctValues`` — MapState ``(k STRING) → (c BIGINT)``: ``k`` = JSON ``[aggregate index, value]``;
  the multiset behind ``DISTINCT`` aggregates and behind MIN/MAX under retraction.

Emission per key: the first row ``+I``; a changed result ``-U old`` (when ``generateUpdateBefore``) and
``+U new``; the last row retracted ``-D old``; an unchanged result nothing (unless state TTL is on, where
Flink re-emits so downstream TTL is refreshed). Without mini-batch each input record is applied and
emitted like Flink does per record; with ``table.exec.mini-batch.enabled`` the key's records of a
micro-batch are folded into one change (Flink's mini-batch does the same per bundle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from planengine.ir.types import DataType
from planengine.runtime.operators._tws import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    ChangelogProcessor,
    Record,
    is_accumulate,
    run_keyed,
)
from planengine.runtime.operators.aggregates.accumulators import SKIP, BoundAggregate, make_aggregator
from planengine.runtime.operators.state_codec import decode

ACC_SCHEMA = "acc STRING, ts BIGINT"
BAG_KEY_SCHEMA = "k STRING"
BAG_VALUE_SCHEMA = "c BIGINT"


class _Bags:
    """The ``distinctValues`` MapState seen through a write-back cache, one bag per aggregate index."""

    def __init__(self, state: Any, encode: Callable[[Any], str]):
        self.state = state
        self.encode = encode
        self.cache: dict[str, int] = {}
        self.dirty: set[str] = set()
        self.loaded_all = False

    def bag(self, index: int) -> _Bag:
        return _Bag(self, index)

    def count(self, k: str) -> int:
        if k not in self.cache:
            if self.loaded_all:
                return 0
            v = self.state.getValue((k,))
            self.cache[k] = int(v[0]) if v is not None else 0
        return self.cache[k]

    def set(self, k: str, c: int) -> None:
        self.cache[k] = c
        self.dirty.add(k)

    def load_all(self) -> None:
        if not self.loaded_all:
            for (k,), (c,) in self.state.iterator():
                if k not in self.cache:
                    self.cache[k] = int(c)
            self.loaded_all = True

    def flush(self) -> None:
        for k in self.dirty:
            c = self.cache[k]
            if c > 0:
                self.state.updateValue((k,), (c,))
            else:
                self.state.removeKey((k,))
        self.dirty.clear()

    def reset(self) -> None:
        self.cache.clear()
        self.dirty.clear()
        self.loaded_all = False


class _Bag:
    def __init__(self, bags: _Bags, index: int):
        self.bags = bags
        self.index = index

    def add(self, value: Any, delta: int) -> int:
        k = self.bags.encode([self.index, value])
        c = max(self.bags.count(k) + delta, 0)
        self.bags.set(k, c)
        return c

    def items(self) -> Iterator[tuple[Any, int]]:
        self.bags.load_all()
        for k, c in self.bags.cache.items():
            if c > 0:
                index, value = decode(k)
                if index == self.index:
                    yield (tuple(value) if isinstance(value, list) else value), c


class GroupAggregateProcessor(ChangelogProcessor):
    def __init__(self, *, in_columns: Sequence[str], in_types: Sequence[DataType], in_updating: bool,
                 out_types: Sequence[DataType], grouping: Sequence[int], aggregates: Sequence[Any],
                 need_retraction: bool, generate_update_before: bool, mini_batch: bool, ttl_ms: int = 0,
                 state_names: Sequence[str] = ("accumulators", "distinctValues"),
                 json_user_accumulators: bool = False):
        super().__init__(in_columns, in_types, in_updating, out_types, ttl_ms)
        self.grouping = tuple(grouping)
        self.calls = tuple(aggregates)
        self.need_retraction = need_retraction or in_updating
        self.generate_update_before = generate_update_before
        self.mini_batch = mini_batch
        self.state_names = tuple(state_names)
        self.json_user_accumulators = json_user_accumulators

    def open(self, handle: Any) -> None:
        self.aggs: list[BoundAggregate] = [make_aggregator(c, self.in_types, self.need_retraction,
                                                           self.json_user_accumulators) for c in self.calls]
        self.acc_state = handle.getValueState(self.state_names[0], ACC_SCHEMA)
        self.bags = _Bags(handle.getMapState(self.state_names[1], BAG_KEY_SCHEMA, BAG_VALUE_SCHEMA), self.encode_state)
        self.uses_bags = any(a.aggregator.uses_bag for a in self.aggs)

    def _row(self, group: tuple[Any, ...], accs: list[Any]) -> tuple[Any, ...]:
        return (*group, *(a.aggregator.result(acc) for a, acc in zip(self.aggs, accs, strict=True)))

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        self.bags.reset()
        stored = self.acc_state.get() if self.acc_state.exists() else None
        state = decode(stored[0]) if stored is not None else None
        if state is not None and self.expired(stored[1]):
            state = None
            self.bags.state.clear()
        if state is None:
            n, accs, prev = 0, [a.aggregator.create() for a in self.aggs], None
        else:
            n, accs = state["n"], state["a"]
            prev = tuple(state["out"]) if state["out"] is not None else None
        first_prev = prev
        group: tuple[Any, ...] | None = tuple(state["g"]) if state is not None else None
        out: list[Record] = []
        for kind, row in records:
            accumulate = is_accumulate(kind)
            if not accumulate and n <= 0:
                continue  # a retraction for a group we do not know (Flink ignores it)
            if group is None:
                group = tuple(row[i] for i in self.grouping)
            for i, a in enumerate(self.aggs):
                v = a.argument(row)
                if v is SKIP:
                    continue
                bag = self.bags.bag(i) if a.aggregator.uses_bag else None
                if accumulate:
                    accs[i] = a.aggregator.accumulate(accs[i], v, bag)
                else:
                    accs[i] = a.aggregator.retract(accs[i], v, bag)
            n += 1 if accumulate else -1
            if not self.mini_batch:
                prev = self._emit(out, prev, n, group, accs)
        if self.mini_batch and group is not None:
            self._emit(out, first_prev, n, group, accs)
            prev = None if n <= 0 else self._row(group, accs)
        elif self.mini_batch:
            prev = first_prev
        if n <= 0:
            if state is not None or records:
                self.acc_state.clear()
                if self.uses_bags:
                    self.bags.state.clear()
            return out
        self.acc_state.update((self.encode_state({"n": n, "a": accs, "out": prev, "g": group}), self.now))
        if self.uses_bags:
            self.bags.flush()
        return out

    def _emit(self, out: list[Record], prev: tuple[Any, ...] | None, n: int, group: tuple[Any, ...],
              accs: list[Any]) -> tuple[Any, ...] | None:
        if n <= 0:
            if prev is not None:
                out.append((DELETE, prev))
            return None
        new = self._row(group, accs)
        if prev is None:
            out.append((INSERT, new))
        elif new != prev or self.ttl_ms:
            if self.generate_update_before:
                out.append((UPDATE_BEFORE, prev))
            out.append((UPDATE_AFTER, new))
        return new


def group_aggregate(stream: Any, node: Any, ctx: Any) -> Any:
    """``stream-exec-group-aggregate``: one TWS keyed by the grouping columns (a constant key if none).

    From version 4 a Python aggregate function's accumulator is kept as tagged JSON instead of a pickle."""

    in_types = node.inputs[0].field_types if node.inputs else None
    if in_types is None:
        raise ValueError("group aggregate needs its input node's types")
    processor = GroupAggregateProcessor(
        in_columns=stream.columns, in_types=in_types, in_updating=stream.updating, out_types=node.field_types,
        grouping=node.grouping, aggregates=node.aggregates, need_retraction=node.need_retraction,
        generate_update_before=node.generate_update_before,
        mini_batch=str(ctx.option(node, "table.exec.mini-batch.enabled", "false")).lower() == "true",
        ttl_ms=ctx.state_ttl_ms(node), state_names=type(node).STATE_NAMES,
        json_user_accumulators=node.metadata.version >= 4)
    keys = [stream.columns[i] for i in node.grouping]
    return run_keyed(stream, stream.df, keys, processor, node.field_names, node.field_types)
