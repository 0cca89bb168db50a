"""Regular (non-windowed) joins: inner, left, right, full outer, semi and anti — Flink's
``StreamingJoinOperator`` and ``StreamingSemiAntiJoinOperator`` on one single-input TWS.

Spark's ``transformWithState`` has one input, so both sides are unioned into one stream keyed by the join
key: ``_k0…`` (the equi-key values), ``_side`` (0 left, 1 right), ``_rowkind``, then the left fields
``l0…`` and the right fields ``r0…`` (the other side's columns NULL).

State per join key (names from ``Join.STATE_NAMES``), each a MapState ``(row STRING) → (cnt BIGINT,
assoc BIGINT, ts BIGINT)``: ``leftRows`` and ``rightRows`` hold each side's rows as JSON with their
multiplicity and, for a row on an outer (or semi/anti left) side, the number of rows of the other side
it currently joins with (Flink's ``numOfAssociations``), which decides when a NULL-padded row is
retracted (``-D`` padded, ``+I`` joined) or re-emitted.

Row kinds as Flink emits them: an accumulating input row on a non-outer side keeps its kind (``+I``/
``+U``) in the joined rows, a retracting one (``-U``/``-D``) too; outer sides emit ``+I``/``-D``.
Rows whose key is NULL in a column with ``filterNulls`` never match (an outer side still emits them padded).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import functions as F

from planengine.functions.spark_types import render_spark_type
from planengine.ir.types import INT, DataType
from planengine.runtime.dataflow.stream import ROWKIND
from planengine.runtime.operators._pyexpr import compile_condition
from planengine.runtime.operators._tws import (
    DELETE,
    INSERT,
    ChangelogProcessor,
    Record,
    is_accumulate,
    run_keyed,
)
from planengine.runtime.operators.state_codec import decode_row

ROW_KEY_SCHEMA = "row STRING"
ROW_VALUE_SCHEMA = "cnt BIGINT, assoc BIGINT, ts BIGINT"
SIDE = "_side"


class _SideState:
    """One side's MapState, loaded once per key and written back at the end of the batch."""

    def __init__(self, state: Any, processor: ChangelogProcessor):
        self.state = state
        self.processor = processor

    def load(self) -> None:
        self.rows: dict[str, list[Any]] = {}  # json -> [row, count, assoc]
        self.dirty: set[str] = set()
        for (k,), (cnt, assoc, ts) in self.state.iterator():
            if self.processor.expired(ts):
                self.rows[k] = [None, 0, 0]
                self.dirty.add(k)
            else:
                self.rows[k] = [decode_row(k), int(cnt), int(assoc)]

    def entries(self) -> list[tuple[str, list[Any]]]:
        return [(k, e) for k, e in self.rows.items() if e[1] > 0]

    def add(self, row: tuple[Any, ...], assoc: int) -> None:
        k = self.processor.encode_state(row)
        e = self.rows.get(k)
        if e is None or e[1] <= 0:
            self.rows[k] = [row, 1, assoc]
        else:
            e[1] += 1
            e[2] = assoc
        self.dirty.add(k)

    def retract(self, row: tuple[Any, ...]) -> None:
        k = self.processor.encode_state(row)
        e = self.rows.get(k)
        if e is not None and e[1] > 0:
            e[1] -= 1
            self.dirty.add(k)

    def set_assoc(self, k: str, assoc: int) -> None:
        self.rows[k][2] = assoc
        self.dirty.add(k)

    def flush(self, now: int) -> None:
        for k in self.dirty:
            e = self.rows[k]
            if e[1] > 0:
                self.state.updateValue((k,), (e[1], e[2], now))
            else:
                self.state.removeKey((k,))


class JoinProcessor(ChangelogProcessor):
    def __init__(self, *, left_types: Sequence[DataType], right_types: Sequence[DataType],
                 out_types: Sequence[DataType], join_type: str, left_keys: Sequence[int], right_keys: Sequence[int],
                 filter_nulls: Sequence[bool],
                 condition: Any, ttl_ms: int = 0, state_names: Sequence[str] = ("leftRows", "rightRows")):
        nl, nr = len(left_types), len(right_types)
        columns = [*(f"l{i}" for i in range(nl)), *(f"r{i}" for i in range(nr)), SIDE]
        super().__init__(columns, [*left_types, *right_types, INT], True, out_types, ttl_ms)
        self.nl, self.nr = nl, nr
        self.join_type = join_type.upper()
        self.left_keys, self.right_keys = tuple(left_keys), tuple(right_keys)
        self.filter_nulls = tuple(filter_nulls) or (True,) * len(left_keys)
        self.condition_expr = condition
        self.state_names = tuple(state_names)

    def open(self, handle: Any) -> None:
        self.sides = (_SideState(handle.getMapState(self.state_names[0], ROW_KEY_SCHEMA, ROW_VALUE_SCHEMA), self),
                      _SideState(handle.getMapState(self.state_names[1], ROW_KEY_SCHEMA, ROW_VALUE_SCHEMA), self))
        self.condition = compile_condition(self.condition_expr)
        jt = self.join_type
        self.outer = (jt in ("LEFT", "FULL"), jt in ("RIGHT", "FULL"))
        self.semi_anti = jt in ("SEMI", "ANTI")

    def _unmatchable(self, row: tuple[Any, ...], side: int) -> bool:
        keys = self.left_keys if side == 0 else self.right_keys
        return any(row[k] is None and f for k, f in zip(keys, self.filter_nulls, strict=False))

    def _joined(self, row: tuple[Any, ...], other: tuple[Any, ...] | None, side: int) -> tuple[Any, ...]:
        if self.semi_anti:
            return row if side == 0 else other  # type: ignore[return-value]
        left = row if side == 0 else other
        right = other if side == 0 else row
        left = left if left is not None else (None,) * self.nl
        right = right if right is not None else (None,) * self.nr
        return (*left, *right)

    def _matches(self, row: tuple[Any, ...], side: int) -> list[tuple[str, list[Any]]]:
        other = self.sides[1 - side]
        if side == 0:
            return [(k, e) for k, e in other.entries() if self.condition((*row, *e[0]))]
        return [(k, e) for k, e in other.entries() if self.condition((*e[0], *row))]

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        for s in self.sides:
            s.load()
        out: list[Record] = []
        for kind, combined in records:
            side = combined[-1]
            row = combined[:self.nl] if side == 0 else combined[self.nl:self.nl + self.nr]
            if self.semi_anti:
                self._semi_anti(out, kind, row, side)
            else:
                self._join(out, kind, row, side)
        for s in self.sides:
            s.flush(self.now)
        return out

    def _join(self, out: list[Record], kind: str, row: tuple[Any, ...], side: int) -> None:
        input_outer, other_outer = self.outer[side], self.outer[1 - side]
        accumulate = is_accumulate(kind)
        if self._unmatchable(row, side):
            if input_outer:
                out.append((INSERT if accumulate else DELETE, self._joined(row, None, side)))
            return
        matches = self._matches(row, side)
        n_matches = sum(e[1] for _, e in matches)
        state, other_state = self.sides[side], self.sides[1 - side]
        if accumulate:
            if input_outer and not matches:
                out.append((INSERT, self._joined(row, None, side)))
                state.add(row, 0)
                return
            if other_outer:
                for k, e in matches:
                    if e[2] == 0:
                        out.extend([(DELETE, self._joined(e[0], None, 1 - side))] * e[1])
                    other_state.set_assoc(k, e[2] + 1)
            out_kind = INSERT if (input_outer or other_outer) else kind
            for _, e in matches:
                out.extend([(out_kind, self._joined(row, e[0], side))] * e[1])
            state.add(row, n_matches if input_outer else 0)
            return
        state.retract(row)
        if not matches:
            if input_outer:
                out.append((DELETE, self._joined(row, None, side)))
            return
        out_kind = DELETE if input_outer else kind
        for _, e in matches:
            out.extend([(out_kind, self._joined(row, e[0], side))] * e[1])
        if other_outer:
            for k, e in matches:
                if e[2] == 1:
                    out.extend([(INSERT, self._joined(e[0], None, 1 - side))] * e[1])
                other_state.set_assoc(k, e[2] - 1)

    def _semi_anti(self, out: list[Record], kind: str, row: tuple[Any, ...], side: int) -> None:
        anti = self.join_type == "ANTI"
        accumulate = is_accumulate(kind)
        if self._unmatchable(row, side):
            if side == 0 and anti:
                out.append((kind, row))
            return
        matches = self._matches(row, side)
        if side == 0:
            if bool(matches) != anti:
                out.append((kind, row))
            if accumulate:
                self.sides[0].add(row, sum(e[1] for _, e in matches))
            else:
                self.sides[0].retract(row)
            return
        left = self.sides[0]
        if accumulate:
            self.sides[1].add(row, 0)
            for k, e in matches:
                if e[2] == 0:
                    out.extend([(DELETE if anti else kind, e[0])] * e[1])
                left.set_assoc(k, e[2] + 1)
        else:
            self.sides[1].retract(row)
            for k, e in matches:
                if e[2] == 1:
                    out.extend([(INSERT if anti else kind, e[0])] * e[1])
                left.set_assoc(k, e[2] - 1)


def join_sides(left: Any, right: Any, node: Any) -> Any:
    """Both inputs of a regular join as one DataFrame, the form both join operators (this one and the JVM
    processor, ``runtime/jvm/join_processor.py``) key and keep: the join key cast to the left key's type
    (``_k0..``), ``_side`` (0 left, 1 right), ``_rowkind``, then the left row (``l0..``) and the right row
    (``r0..``), the other side's columns NULL."""
    lt, rt = node.inputs[0].field_types, node.inputs[1].field_types
    key_types = [lt[i] for i in node.left_keys]

    def side_df(stream: Any, side: int) -> Any:
        keys = node.left_keys if side == 0 else node.right_keys
        cols = [F.col(stream.columns[k]).cast(render_spark_type(t)).alias(f"_k{i}")
                for i, (k, t) in enumerate(zip(keys, key_types, strict=True))]
        cols.append(F.lit(side).cast("int").alias(SIDE))
        cols.append((F.col(ROWKIND) if stream.updating else F.lit("+I")).alias(ROWKIND))
        for i, t in enumerate(lt):
            src = F.col(left.columns[i]) if side == 0 else F.lit(None)
            cols.append(src.cast(render_spark_type(t)).alias(f"l{i}"))
        for i, t in enumerate(rt):
            src = F.col(right.columns[i]) if side == 1 else F.lit(None)
            cols.append(src.cast(render_spark_type(t)).alias(f"r{i}"))
        return stream.df.select(*cols)

    return side_df(left, 0).unionByName(side_df(right, 1))


def join(left: Any, right: Any, node: Any, ctx: Any) -> Any:
    """``stream-exec-join``: union both sides (tagged ``_side``) and run one TWS keyed by the join key."""

    lt, rt = node.inputs[0].field_types, node.inputs[1].field_types
    key_types = [lt[i] for i in node.left_keys]
    df = join_sides(left, right, node)
    processor = JoinProcessor(
        left_types=lt, right_types=rt, out_types=node.field_types, join_type=node.join_type,
        left_keys=node.left_keys, right_keys=node.right_keys, filter_nulls=node.filter_nulls,
        condition=node.non_equi_condition, ttl_ms=ctx.state_ttl_ms(node), state_names=type(node).STATE_NAMES)
    return run_keyed(left, df, [f"_k{i}" for i in range(len(key_types))], processor, node.field_names,
                     node.field_types, insert_only=node.changelog_mode.contains_only_inserts())
