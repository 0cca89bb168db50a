"""Top-N (Flink's ``Rank``: ROW_NUMBER / RANK / DENSE_RANK), sort-limit and limit.

State ``rankedRows`` (``topRows`` for sort-limit) — ValueState ``(rows STRING, seq BIGINT, ts BIGINT)``:
the partition's rows in sort order as JSON ``[[seq, row], …]``; ``seq`` numbers arrivals so rows with equal
sort keys keep arrival order (Flink's order among ties). With insert-only input only rows that can still
rank within ``rankEnd`` are kept (Flink's AppendFast strategy); with updating input every row is kept so
a retraction can promote the next one (Retract strategy).

Emission diffs the top-N before and after each record:

* with the rank number (``outputRowNumber``), per rank position: a position that gains a row ``+I``,
  loses it ``-D``, changes rows ``-U old`` (when ``generateUpdateBefore``) and ``+U new`` — exactly
  Flink's per-position updates (``-U[2, a, 1]``, ``+U[1, a, 1]``);
* without it, the rows leaving the top-N ``-D`` and the rows entering it ``+I``.

``Limit`` (no order) keeps ``emittedCount`` — ValueState ``(n BIGINT, ts BIGINT)`` — and lets the rows
numbered ``offset+1 … offset+limit`` pass; its output is insert-only.
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.exec.nodes import FULL_SORT_FETCH
from planengine.ir.types import BOOLEAN, DataType
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
from planengine.runtime.operators.state_codec import decode

RANKED_SCHEMA = "rows STRING, seq BIGINT, ts BIGINT"
COUNT_SCHEMA = "n BIGINT, ts BIGINT"


def _compare_values(a: Any, b: Any, ascending: bool, nulls_first: bool) -> int:
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return (-1 if nulls_first else 1) if a is None else (1 if nulls_first else -1)
    c = (a > b) - (a < b)
    return c if ascending else -c


class OrderedRowsProcessor(ChangelogProcessor):
    """Rows kept in one value state in a Flink sort order (``order``: (field, ascending, nulls_first)).

    Shared by the Top-N and the full sort, which store their rows the same way (``[[seq, row], ...]``), so
    both compare rows with Flink's null ordering through one comparator.
    """

    order: tuple[tuple[int, bool, bool], ...]
    state_name: str

    def open(self, handle: Any) -> None:
        self.state = handle.getValueState(self.state_name, RANKED_SCHEMA)
        self._key = functools.cmp_to_key(self._compare)

    def _compare(self, x: tuple[Any, ...], y: tuple[Any, ...]) -> int:
        for f, asc, nf in self.order:
            c = _compare_values(x[f], y[f], asc, nf)
            if c:
                return c
        return 0

    def _load(self) -> tuple[list[list[Any]], int]:
        """The stored ``[[seq, row], ...]`` and the next sequence number (empty once expired by TTL)."""
        stored = self.state.get() if self.state.exists() else None
        if stored is None or self.expired(stored[2]):
            return [], 0
        return [[e[0], tuple(e[1])] for e in decode(stored[0])], int(stored[1])


class RankProcessor(OrderedRowsProcessor):
    def __init__(self, *, in_columns: Sequence[str], in_types: Sequence[DataType], in_updating: bool,
                 out_types: Sequence[DataType], order: Sequence[tuple[int, bool, bool]], rank_type: str,
                 rank_start: int, rank_end: int, output_rank_number: bool, generate_update_before: bool,
                 ttl_ms: int = 0, state_name: str = "rankedRows"):
        super().__init__(in_columns, in_types, in_updating, out_types, ttl_ms)
        self.order = tuple(order)  # (field, ascending, nulls_first)
        self.rank_type = rank_type.upper()
        self.rank_start = rank_start
        self.rank_end = rank_end
        self.output_rank_number = output_rank_number
        self.generate_update_before = generate_update_before
        self.state_name = state_name

    def _sort_key(self, entry: list[Any]) -> tuple[Any, int]:
        return (self._key(entry[1]), entry[0])

    def _ranks(self, entries: list[list[Any]]) -> list[int]:
        """The rank of every entry (1-based) under the rank function."""
        ranks: list[int] = []
        dense = 0
        for i, (_, row) in enumerate(entries):
            if self.rank_type == "ROW_NUMBER":
                ranks.append(i + 1)
                continue
            tie = i > 0 and self._compare(entries[i - 1][1], row) == 0
            if self.rank_type == "DENSE_RANK":
                dense = dense if tie else dense + 1
                ranks.append(dense)
            else:
                ranks.append(ranks[-1] if tie else i + 1)
        return ranks

    def _top(self, entries: list[list[Any]]) -> list[tuple[int, tuple[Any, ...]]]:
        out = []
        for rank, (_, row) in zip(self._ranks(entries), entries, strict=True):
            if rank > self.rank_end:
                break
            if rank >= self.rank_start:
                out.append((rank, row))
        return out

    def _row(self, rank: int, row: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*row, rank) if self.output_rank_number else row

    def _diff(self, out: list[Record], old: list[tuple[int, tuple[Any, ...]]],
              new: list[tuple[int, tuple[Any, ...]]]) -> None:
        if old == new:
            return
        if self.output_rank_number and self.rank_type == "ROW_NUMBER":
            before = dict(old)
            after = dict(new)
            for rank in sorted(set(before) | set(after)):
                o, n = before.get(rank), after.get(rank)
                if o == n:
                    continue
                if o is None:
                    out.append((INSERT, self._row(rank, n)))
                elif n is None:
                    out.append((DELETE, self._row(rank, o)))
                else:
                    if self.generate_update_before:
                        out.append((UPDATE_BEFORE, self._row(rank, o)))
                    out.append((UPDATE_AFTER, self._row(rank, n)))
            return
        # Counted by their state text: a row holding a MAP (a dict) is not hashable.
        rows: dict[str, tuple[Any, ...]] = {}
        before_rows, after_rows = Counter(), Counter()
        for counts, entries in ((before_rows, old), (after_rows, new)):
            for r, entry in entries:
                row = self._row(r, entry)
                text = self.encode_state(row)
                rows[text] = row
                counts[text] += 1
        for text in before_rows - after_rows:
            out.extend([(DELETE, rows[text])] * (before_rows[text] - after_rows[text]))
        for text in after_rows - before_rows:
            out.extend([(INSERT, rows[text])] * (after_rows[text] - before_rows[text]))

    def _trim(self, entries: list[list[Any]]) -> list[list[Any]]:
        """Insert-only input: rows ranked beyond ``rankEnd`` can never come back."""
        if self.in_updating or len(entries) <= self.rank_end:
            return entries
        ranks = self._ranks(entries)
        keep = len(entries)
        for i, r in enumerate(ranks):
            if r > self.rank_end:
                keep = i
                break
        return entries[:keep]

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        entries, seq = self._load()
        keys = [self._sort_key(e) for e in entries]
        out: list[Record] = []
        top = self._top(entries)
        for kind, row in records:
            if is_accumulate(kind):
                entry = [seq, row]
                seq += 1
                k = self._sort_key(entry)
                i = bisect.bisect_right(keys, k)
                entries.insert(i, entry)
                keys.insert(i, k)
            else:
                for i in range(len(entries) - 1, -1, -1):
                    if entries[i][1] == row:
                        del entries[i]
                        del keys[i]
                        break
                else:
                    continue  # retraction of a row we do not hold
            trimmed = self._trim(entries)
            if len(trimmed) != len(entries):
                entries, keys = trimmed, keys[:len(trimmed)]
            new_top = self._top(entries)
            self._diff(out, top, new_top)
            top = new_top
        if records:
            if entries:
                self.state.update((self.encode_state(entries), seq, self.now))
            elif self.state.exists():
                self.state.clear()
        return out


def sort_order(node: Any) -> list[tuple[int, bool, bool]]:
    """``(field, ascending, nulls_first)`` per sort key; Flink puts NULLs first ascending, last descending."""
    return [(k.field, k.ascending, k.ascending if k.nulls_first is None else k.nulls_first) for k in node.order_keys]


def rank(stream: Any, node: Any, ctx: Any) -> Any:
    """``stream-exec-rank``: keyed by the partition columns."""
    in_types = node.inputs[0].field_types
    processor = RankProcessor(
        in_columns=stream.columns, in_types=in_types, in_updating=stream.updating, out_types=node.field_types,
        order=sort_order(node), rank_type=node.rank_type, rank_start=node.rank_start, rank_end=node.rank_end,
        output_rank_number=node.output_rank_number, generate_update_before=node.generate_update_before,
        ttl_ms=ctx.state_ttl_ms(node), state_name=type(node).STATE_NAMES[0])
    keys = [stream.columns[i] for i in node.partition_keys]
    return run_keyed(stream, stream.df, keys, processor, node.field_names, node.field_types,
                     insert_only=node.changelog_mode.contains_only_inserts())


def sort_limit(stream: Any, node: Any, ctx: Any) -> Any:
    """``stream-exec-sort-limit``: a global Top-N (one partition) without the rank number."""
    types = node.field_types
    processor = RankProcessor(
        in_columns=stream.columns, in_types=types, in_updating=stream.updating, out_types=types,
        order=sort_order(node), rank_type="ROW_NUMBER", rank_start=node.offset + 1, rank_end=node.offset + node.limit,
        output_rank_number=False, generate_update_before=node.generate_update_before,
        ttl_ms=ctx.state_ttl_ms(node), state_name=type(node).STATE_NAMES[0])
    return run_keyed(stream, stream.df, [], processor, node.field_names, types,
                     insert_only=node.changelog_mode.contains_only_inserts())


UNBOUNDED_FETCH = FULL_SORT_FETCH


def is_full_sort(node: Any) -> bool:
    """The sort-limit node is a non-temporal ORDER BY without LIMIT (Flink's StreamExecSort)."""
    return node.limit >= UNBOUNDED_FETCH


class FullSortProcessor(OrderedRowsProcessor):
    """Flink's ``StreamSortOperator``: buffer the whole input, emit it sorted once, at the end of input.

    A sort of an unbounded stream has no earlier moment at which any row's position is final, so (like
    Flink, whose operator emits in ``endInput``) nothing leaves before the end-of-input marker (``drain``);
    then every buffered row leaves as ``+I`` in sort order (ties in arrival order) and the buffer is
    emptied. Retractions remove a buffered row. The last input column is the marker flag. State
    ``topRows`` keeps the buffer exactly as the Top-N does (``[[seq, row], …]`` in sort order).
    """

    def __init__(self, *, in_columns: Sequence[str], in_types: Sequence[DataType], in_updating: bool,
                 out_types: Sequence[DataType], order: Sequence[tuple[int, bool, bool]], offset: int,
                 ttl_ms: int = 0, state_name: str = "topRows"):
        super().__init__(in_columns, in_types, in_updating, out_types, ttl_ms)
        self.order = tuple(order)
        self.offset = offset
        self.state_name = state_name

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        entries, seq = self._load()
        keys = [(self._key(e[1]), e[0]) for e in entries]
        out: list[Record] = []
        # The marker may share a micro-batch with the last rows (two sources in one query); those rows were
        # read before the end of input, so they are sorted in first.
        end_of_input = any(flagged[-1] for _, flagged in records)
        for kind, flagged in records:
            row = flagged[:-1]
            if flagged[-1]:
                continue
            if is_accumulate(kind):
                k = (self._key(row), seq)
                i = bisect.bisect_right(keys, k)
                entries.insert(i, [seq, row])
                keys.insert(i, k)
                seq += 1
            else:
                for i in range(len(entries) - 1, -1, -1):
                    if entries[i][1] == row:
                        del entries[i]
                        del keys[i]
                        break
        if end_of_input:
            out.extend((INSERT, r) for _, r in entries[self.offset:])
            entries = []
        if records:
            if entries:
                self.state.update((self.encode_state(entries), seq, self.now))
            elif self.state.exists():
                self.state.clear()
        return out


def full_sort(stream: Any, df: Any, end_of_input_column: str, node: Any, ctx: Any) -> Any:
    """``stream-exec-sort-limit`` without a fetch: ``df`` is ``stream``'s rows plus a boolean end-of-input
    column (``True`` only on the drain marker, whose data columns are NULL)."""

    types = node.field_types
    processor = FullSortProcessor(
        in_columns=[*stream.columns, end_of_input_column], in_types=[*types, BOOLEAN], in_updating=stream.updating,
        out_types=types, order=sort_order(node), offset=node.offset, ttl_ms=ctx.state_ttl_ms(node),
        state_name=type(node).STATE_NAMES[0])
    return run_keyed(stream, df, [], processor, node.field_names, types)


class LimitProcessor(ChangelogProcessor):
    def __init__(self, *, in_columns: Sequence[str], in_types: Sequence[DataType], offset: int, limit: int,
                 ttl_ms: int = 0, state_name: str = "emittedCount"):
        super().__init__(in_columns, in_types, False, in_types, ttl_ms)
        self.offset = offset
        self.limit = limit
        self.state_name = state_name

    def open(self, handle: Any) -> None:
        self.state = handle.getValueState(self.state_name, COUNT_SCHEMA)

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        stored = self.state.get() if self.state.exists() else None
        n = int(stored[0]) if stored is not None and not self.expired(stored[1]) else 0
        out = []
        for _, row in records:
            if self.offset <= n < self.offset + self.limit:
                out.append((INSERT, row))
            n += 1
            if n >= self.offset + self.limit:
                break
        if records:
            self.state.update((n, self.now))
        return out


def limit(stream: Any, node: Any, ctx: Any) -> Any:
    """``stream-exec-limit`` over an insert-only input: the first ``limit`` rows after ``offset``."""

    if stream.updating:
        raise ValidationError("LIMIT without ORDER BY over an updating input is not supported",
                              hint="add an ORDER BY so the query becomes a sort-limit")
    types = node.field_types
    processor = LimitProcessor(in_columns=stream.columns, in_types=types, offset=node.offset, limit=node.limit,
                               ttl_ms=ctx.state_ttl_ms(node), state_name=type(node).STATE_NAMES[0])
    return run_keyed(stream, stream.df, [], processor, node.field_names, types, insert_only=True)
