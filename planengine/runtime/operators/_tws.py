"""The shared shape of every changelog operator: a keyed ``transformWithStateInPandas`` processor.

``ChangelogProcessor.process(key, records)`` sees the key's records of one micro-batch in arrival order
as ``(rowkind, row)`` pairs (rows are exact Python tuples, see ``state_codec``) and returns the changelog to
emit. ``run_keyed`` groups a stream by key columns (a constant key for global operators), runs the
processor with ``timeMode="None"`` in ``Append`` mode and gives back an updating ``Stream``.

Order within a key: Spark sorts a micro-batch by grouping key before the processor sees it; its sorts are
stable, so a key's rows keep the order in which the source produced them within one input partition.

State TTL (``ctx.state_ttl_ms``): Spark only supports TTL on state variables in ``ProcessingTime`` mode,
which never goes idle (``--until-idle`` and AvailableNow would hang). Every state value therefore carries
its last write time (wall clock, ms) and a value older than the TTL is treated as absent and cleared when
its key is next seen — Flink's ``NeverReturnExpired`` visibility with ``OnCreateAndWrite`` updates. Keys
that are never seen again keep their (invisible) state until the state is rewritten.
"""

from __future__ import annotations

import decimal
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

from planengine.functions.spark_types import render_spark_type
from planengine.ir.types import STRING, DataType
from planengine.runtime.dataflow.stream import ROWKIND, Stream, column_names
from planengine.runtime.operators.state_codec import converter, frame_rows, rows_frame, state_encoder

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "+I", "-U", "+U", "-D"
ACCUMULATE = frozenset((INSERT, UPDATE_AFTER))
GLOBAL_KEY = "_key"
_INTEGRAL_SPARK_TYPES = (ByteType, ShortType, IntegerType, LongType)

Record = tuple[str, tuple[Any, ...]]


def is_accumulate(kind: str) -> bool:
    return kind in ACCUMULATE


def now_ms() -> int:
    return int(time.time() * 1000)


def spark_schema(columns: Sequence[str], types: Sequence[DataType]) -> str:
    return ", ".join(f"`{c}` {render_spark_type(t)}" for c, t in zip(columns, types, strict=True))


class ChangelogProcessor(StatefulProcessor):
    """Decodes a key's frames into records, calls ``process``, encodes the changelog it returns."""

    def __init__(self, in_columns: Sequence[str], in_types: Sequence[DataType], in_updating: bool,
                 out_types: Sequence[DataType], ttl_ms: int = 0, kind_column: str = ROWKIND):
        self.in_columns = list(in_columns)
        self.in_types = list(in_types)
        self.in_updating = in_updating
        self.out_types = list(out_types)
        self.out_columns = [*column_names(len(out_types)), ROWKIND]
        self.ttl_ms = ttl_ms
        self.kind_column = kind_column
        # State text for rows and values of these types (``state_codec.state_encoder``: keeps non-string MAP keys).
        self.encode_state = state_encoder([*self.in_types, *self.out_types])

    # --- Spark's interface ----------------------------------------------------------------------------
    def init(self, handle: Any) -> None:
        self.converters = [converter(t) for t in self.in_types]
        self.state_client = getattr(handle, "_statefulProcessorApiClient", None)
        self.open(handle)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        key = self.exact_key(tuple(key))
        records: list[Record] = []
        for pdf in rows:
            values = frame_rows(pdf, self.positions, self.converters)
            kinds = pdf.iloc[:, self.kind_position].tolist() if self.in_updating else [INSERT] * len(values)
            records.extend(zip(kinds, values, strict=True))
        with decimal.localcontext() as dc:
            dc.prec = 76  # DECIMAL(38, s) sums and averages stay exact
            self.now = now_ms()
            out = self.process(key, records)
        if out:
            yield rows_frame([(*row, kind) for kind, row in out], self.out_columns, [*self.out_types, None])

    def close(self) -> None:
        pass

    # Which grouping-key columns are Spark integer types (set by ``run_keyed``; empty = leave keys alone).
    integral_key: tuple[bool, ...] = ()

    def exact_key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """The grouping key with its integer values restored, re-set as the implicit state key if it changed.

        Spark's worker takes the key from the pandas frame, where an integer column holding a NULL anywhere
        in the Arrow batch is ``float64``: the key arrives as ``2.0``/``NaN``, and the state server turns a
        float for an integer key field into NULL, so every key of that batch would read and write the NULL
        key's state (a join lost its rows, an aggregate merged its groups). Integers beyond 2**53 are
        already rounded by then; this cannot restore them.
        """
        if not any(f and isinstance(v, float) for v, f in zip(key, self.integral_key, strict=False)):
            return key
        exact = tuple((None if math.isnan(v) else int(v)) if f and isinstance(v, float) else v
                      for v, f in zip(key, self.integral_key, strict=False))
        if self.state_client is not None:
            self.state_client.set_implicit_key(exact)
        return exact

    # --- for subclasses -------------------------------------------------------------------------------
    def bind(self, frame_columns: Sequence[str]) -> None:
        """Where the processor's columns sit in the frames Spark hands it (the grouped DataFrame's columns)."""
        cols = list(frame_columns)
        self.positions = [cols.index(c) for c in self.in_columns]
        self.kind_position = cols.index(self.kind_column) if self.in_updating else -1

    def open(self, handle: Any) -> None:
        raise NotImplementedError

    def process(self, key: tuple[Any, ...], records: list[Record]) -> list[Record]:
        raise NotImplementedError

    def expired(self, written_ms: int | None) -> bool:
        return bool(self.ttl_ms) and written_ms is not None and self.now - written_ms > self.ttl_ms


def run_keyed(stream: Stream, df: Any, key_columns: Sequence[str], processor: ChangelogProcessor,
              fields: Sequence[str], out_types: Sequence[DataType],
              insert_only: bool = False) -> Stream:
    """Run ``processor`` over ``df`` grouped by ``key_columns`` (none = one global key).

    ``insert_only``: the node's changelog mode is ``I`` (e.g. proctime keep-first deduplication), so the
    output edge carries no ``_rowkind`` column.
    """
    # Group by copies of the key columns: grouping by a data column itself made Spark 4.3 project the key
    # twice and hand the processor a frame without the last data column.
    if key_columns:
        keys = [f"_g{i}" for i in range(len(key_columns))]
        df = df.select(*[F.col(c).alias(k) for c, k in zip(key_columns, keys, strict=True)], *df.columns)
    else:
        keys = [GLOBAL_KEY]
        df = df.select(F.lit(0).alias(GLOBAL_KEY), *df.columns)
    processor.bind(df.columns)
    processor.integral_key = tuple(isinstance(df.schema[k].dataType, _INTEGRAL_SPARK_TYPES) for k in keys)
    schema = spark_schema([*column_names(len(out_types)), ROWKIND], [*out_types, _STRING])
    out = df.groupBy(*keys).transformWithStateInPandas(processor, schema, "Append", "None")
    if insert_only:
        out = out.select(*column_names(len(out_types)))
    return Stream(df=out, fields=tuple(fields), updating=not insert_only, rowtime=None,
                  facts=replace(stream.facts, stateful=True))


def _string() -> DataType:
    return STRING


_STRING = _string()


