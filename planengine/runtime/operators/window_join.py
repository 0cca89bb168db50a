"""Window join (both inputs windowed by the same TVF) on Spark's native stream-stream join.

Rows join when their keys are equal *and* they are in the same window (equal window_start and
window_end). Each side's window end is marked as an event-time join key, so Spark keeps a side's rows only
until the watermark passes their window end and, for outer joins, emits the null-padded unmatched rows at
that moment — Flink's window join emits everything of a window when it fires, so the materialized result
is the same; inner matches may come out earlier than in Flink (as soon as both rows are present).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.expressions import render_spark_sql
from planengine.runtime.dataflow.stream import RECORD_WATERMARK, Stream, column_name
from planengine.runtime.operators._pyexpr import compile_condition
from planengine.runtime.operators.interval_join import equi_condition, prefixed, spark_join_type
from planengine.runtime.operators.window_assign import as_event_time, millis_sql, watermark_metadata
from planengine.runtime.operators.window_state import run_with_state, value_state


def window_join(left: Stream, right: Stream, join_type: str, left_keys: Sequence[int], right_keys: Sequence[int],
                left_window: Sequence[int], right_window: Sequence[int], non_equi_condition: Any = None) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if left.updating or right.updating:
        raise ValidationError("a window join over an updating input is not supported on this engine")
    n, m = len(left.fields), len(right.fields)
    ldf, rdf = prefixed(left, "_l"), prefixed(right, "_r")
    (ls, le), (rs, re) = left_window[:2], right_window[:2]
    ldf = ldf.select("*", as_event_time(F.col(f"_l{le}").cast("timestamp"), "_lwe",
                                        watermark_metadata(left.df, left.rowtime)))
    rdf = rdf.select("*", as_event_time(F.col(f"_r{re}").cast("timestamp"), "_rwe",
                                        watermark_metadata(right.df, right.rowtime)))
    cond = (F.col("_lwe") == F.col("_rwe")) & (F.col(f"_l{ls}") == F.col(f"_r{rs}"))
    cond = cond & equi_condition(left_keys, right_keys)
    if non_equi_condition is not None:
        names = [f"_l{i}" for i in range(n)] + [f"_r{i}" for i in range(m)]
        cond = cond & F.expr(render_spark_sql(non_equi_condition, names))
    how = spark_join_type(join_type)
    joined = ldf.join(rdf, cond, how)
    if how in ("left_semi", "left_anti"):
        return Stream(joined.select(*[F.col(f"_l{i}").alias(column_name(i)) for i in range(n)]), left.fields)
    out = joined.select(*[F.col(f"_l{i}").alias(column_name(i)) for i in range(n)],
                        *[F.col(f"_r{i}").alias(column_name(n + i)) for i in range(m)])
    return Stream(out, left.fields + right.fields)


# --- version 2: Flink's WindowJoinOperator on transformWithState --------------------------------------------
LEFT_STATE, RIGHT_STATE = "leftWindowRows", "rightWindowRows"
SIDE, WINDOW_END_MS = "_side", "_we_ms"


def _values(struct: Any) -> tuple[Any, ...]:
    """A struct column's values in field order (row-based transformWithState hands structs over as dicts)."""
    return tuple(struct.values()) if isinstance(struct, dict) else tuple(struct)


def _join_processor_class() -> type:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.streaming import StatefulProcessor  # noqa: PLC0415 — pyspark is an optional extra

    class WindowJoinProcessor(StatefulProcessor):
        """One state key = (join key, window end): both sides' rows until the watermark reaches ``end - 1``."""

        def __init__(self, kind: str, n: int, m: int, left_keys: tuple[int, ...], starts: tuple[int, int],
                     condition: Any, per_record: bool, json_state: bool = True):
            self.kind, self.n, self.m, self.left_keys, self.starts = kind, n, m, left_keys, starts
            self.condition, self.per_record, self.json_state = condition, per_record, json_state

        def init(self, handle: Any) -> None:
            self.handle = handle
            state = value_state(self.json_state)
            self.left = state(handle, LEFT_STATE, list)
            self.right = state(handle, RIGHT_STATE, list)
            self.matches = compile_condition(self.condition)

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            wm = timerValues.getCurrentWatermarkInMs()
            end = key[-1]
            left, right = self.left.get(), self.right.get()
            added = False
            for r in rows:
                met = r[RECORD_WATERMARK] if self.per_record else None
                if end - 1 <= (wm if met is None else max(wm, met)):
                    continue  # late: the window fired before this row arrived (Flink's isWindowFired)
                if r[SIDE] == 0:
                    left.append(_values(r["_left"]))
                else:
                    right.append(_values(r["_right"]))
                added = True
            if added:
                self.left.set(left)
                self.right.set(right)
                self.handle.registerTimer(end - 1)
            return iter(())

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            left, right = self.left.get(), self.right.get()
            self.left.clear()
            self.right.clear()
            return iter(self._join(left, right))

        def _join(self, left: list[tuple], right: list[tuple]) -> list[Any]:
            null_left, null_right = (None,) * self.n, (None,) * self.m
            ls, rs = self.starts
            out: list[tuple] = []
            matched_right: set[int] = set()
            for lrow in left:
                # a NULL join key never matches (SQL '='); rows of one state key share the window end
                null_key = any(lrow[k] is None for k in self.left_keys)
                hits = [] if null_key else [j for j, rrow in enumerate(right)
                                            if lrow[ls] == rrow[rs] and self.matches(lrow + rrow)]
                if self.kind in ("SEMI", "ANTI"):
                    if bool(hits) == (self.kind == "SEMI"):
                        out.append(lrow)
                    continue
                matched_right.update(hits)
                out.extend(lrow + right[j] for j in hits)
                if not hits and self.kind in ("LEFT", "FULL"):
                    out.append(lrow + null_right)
            if self.kind in ("RIGHT", "FULL"):
                out.extend(null_left + rrow for j, rrow in enumerate(right) if j not in matched_right)
            width = self.n if self.kind in ("SEMI", "ANTI") else self.n + self.m
            return [Row(**{column_name(i): v for i, v in enumerate(row[:width])}) for row in out]

    return WindowJoinProcessor


def window_join_at_window_end(left: Stream, right: Stream, join_type: str, left_keys: Sequence[int],
                              right_keys: Sequence[int], left_window: Sequence[int], right_window: Sequence[int],
                              non_equi_condition: Any = None, json_state: bool = True) -> Stream:
    """Flink's window join: each side's rows wait in state per (join key, window end); when the watermark
    reaches ``window_end - 1`` the window's rows are joined once (inner matches, outer padding, semi/anti)
    and the state is cleared. A row arriving after that is late and dropped; below a per-record watermark
    assigner the watermark a row met inside its micro-batch counts too (each side its own). ``json_state``: the
    rows are kept with the versioned state codec (version 3) instead of pickles (version 2)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    if left.updating or right.updating:
        raise ValidationError("a window join over an updating input is not supported on this engine")
    kind = spark_join_type(join_type)
    kind = {"inner": "INNER", "left_outer": "LEFT", "right_outer": "RIGHT", "full_outer": "FULL",
            "left_semi": "SEMI", "left_anti": "ANTI"}[kind]
    n, m = len(left.fields), len(right.fields)
    (ls, le), (rs, re) = left_window[:2], right_window[:2]

    def side(stream: Stream, keys: Sequence[int], end: int, index: int) -> Any:
        own = F.struct(*[F.col(f"`{c}`") for c in stream.columns])
        other = (right if index == 0 else left)
        empty = F.lit(None).cast(StructType([StructField(c, other.df.schema[c].dataType, True)
                                             for c in other.columns]))
        wm = F.col(RECORD_WATERMARK) if stream.record_watermark else F.lit(None).cast("bigint")
        return stream.df.filter(F.col(f"`{column_name(end)}`").isNotNull()).select(
            *[F.col(f"`{column_name(k)}`").alias(f"_k{i}") for i, k in enumerate(keys)],
            F.expr(millis_sql(f"`{column_name(end)}`")).alias(WINDOW_END_MS),
            F.lit(index).alias(SIDE),
            (own if index == 0 else empty).alias("_left"), (own if index == 1 else empty).alias("_right"),
            wm.alias(RECORD_WATERMARK))

    rows = side(left, left_keys, le, 0).unionByName(side(right, right_keys, re, 1))
    processor = _join_processor_class()(kind, n, m, tuple(left_keys), (ls, rs), non_equi_condition,
                                        left.record_watermark or right.record_watermark, json_state)
    width = n if kind in ("SEMI", "ANTI") else n + m
    types = [left.df.schema[c].dataType for c in left.columns] + [right.df.schema[c].dataType for c in right.columns]
    schema = StructType([StructField(column_name(i), types[i], True) for i in range(width)])
    keys = [F.col(f"_k{i}") for i in range(len(left_keys))] + [F.col(WINDOW_END_MS)]
    out = run_with_state(rows, keys, processor, schema)
    fields = left.fields if kind in ("SEMI", "ANTI") else left.fields + right.fields
    return Stream(out, fields)

