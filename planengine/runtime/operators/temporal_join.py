"""Event-time temporal join (``FOR SYSTEM_TIME AS OF left.rowtime``) against a versioned table, on TWS.

Both inputs are unioned into one stream keyed by the join key (transformWithState has one grouped input):
right rows become versions ``(time, row)`` — ``+I``/``+U`` set a version, ``-D`` ends it, ``-U`` is
ignored (its ``+U`` follows); left rows wait in ``leftPending`` until the watermark (the minimum of both
inputs' watermarks, as in Flink) reaches their time, then join the version valid at that time: the latest
version whose time is ``<=`` the left row's time. Versions older than the one valid at the watermark are
dropped from ``rightVersions``. Inner joins emit matches only; LEFT joins pad unmatched rows with nulls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.expressions import render_spark_sql
from planengine.runtime.dataflow.stream import ROWKIND, Stream, column_name
from planengine.runtime.operators.window_assign import millis_sql
from planengine.runtime.operators.window_state import TIME_MS, run_with_state, value_state

LEFT_PENDING = "leftPending"
RIGHT_VERSIONS = "rightVersions"


def _processor_class() -> type:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.streaming import StatefulProcessor  # noqa: PLC0415 — pyspark is an optional extra

    class TemporalJoinProcessor(StatefulProcessor):
        def __init__(self, n: int, m: int, outer: bool, json_state: bool = True):
            self.n, self.m, self.outer, self.json_state = n, m, outer, json_state

        def init(self, handle: Any) -> None:
            self.handle = handle
            state = value_state(self.json_state)
            self.pending = state(handle, LEFT_PENDING, list)  # [(t, seq, left row)]
            self.versions = state(handle, RIGHT_VERSIONS, list)  # [(t, seq, right row | None)]

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            pending, versions = self.pending.get(), self.versions.get()
            seq = len(pending) + len(versions)
            for r in rows:
                t = r[TIME_MS]
                if t is None:
                    continue
                seq += 1
                if r["_side"] == 0:
                    pending.append((t, seq, _values(r["_l"])))
                    self.handle.registerTimer(t)
                elif r[ROWKIND] in ("+I", "+U"):
                    versions.append((t, seq, _values(r["_r"])))
                elif r[ROWKIND] == "-D":
                    versions.append((t, seq, None))
            self.pending.set(pending)
            self.versions.set(versions)
            return self._process(timerValues.getCurrentWatermarkInMs())

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            return self._process(max(timerValues.getCurrentWatermarkInMs(), expiredTimerInfo.getExpiryTimeInMs()))

        def _process(self, wm: int) -> Any:
            pending = self.pending.get()
            due = sorted(p for p in pending if p[0] <= wm)
            if not due:
                return iter([])
            versions = sorted(self.versions.get())
            out = []
            for t, _, left in due:
                valid = [v for v in versions if v[0] <= t]
                right = valid[-1][2] if valid else None
                if right is not None:
                    out.append(Row(**_fields(left, right)))
                elif self.outer:
                    out.append(Row(**_fields(left, (None,) * self.m)))
            rest = [p for p in pending if p[0] > wm]
            if rest:
                self.pending.set(rest)
            else:
                self.pending.clear()
            current = [v for v in versions if v[0] <= wm]
            self.versions.set(current[-1:] + [v for v in versions if v[0] > wm])
            return iter(out)

    return TemporalJoinProcessor


def _values(struct: Any) -> tuple[Any, ...]:
    """A struct column's values in field order (workers hand structs over as dicts or Rows)."""
    return tuple(struct.values()) if isinstance(struct, dict) else tuple(struct)


def _fields(left: Sequence[Any], right: Sequence[Any]) -> dict[str, Any]:
    values = (*left, *right)
    return {f"_o{i}": v for i, v in enumerate(values)}


def temporal_join(left: Stream, right: Stream, join_type: str, left_keys: Sequence[int], right_keys: Sequence[int],
                  left_time: int, right_time: int | None, non_equi_condition: Any = None,
                  json_state: bool = True) -> Stream:
    """``json_state``: keep both state variables with the versioned state codec (version 2), not pickles."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    outer = join_type.upper().startswith("LEFT")
    if not outer and join_type.upper() != "INNER":
        raise ValidationError(f"{join_type} temporal joins are not supported (Flink allows INNER and LEFT)")
    if right_time is None:
        raise ValidationError("processing-time temporal joins are not supported on this engine",
                              hint="join FOR SYSTEM_TIME AS OF the left rowtime, with a versioned right table")
    if outer and non_equi_condition is not None:
        raise ValidationError("a LEFT temporal join with a non-equi condition is not supported on this engine")
    if left.updating:
        raise ValidationError("the probe side of a temporal join must be insert-only")
    n, m = len(left.fields), len(right.fields)
    lcols, rcols = left.columns, right.columns
    lstruct = F.struct(*[F.col(f"`{c}`") for c in lcols])
    rstruct = F.struct(*[F.col(f"`{c}`") for c in rcols])
    keys_l = [F.col(f"`{lcols[k]}`").alias(f"_k{i}") for i, k in enumerate(left_keys)]
    keys_r = [F.col(f"`{rcols[k]}`").alias(f"_k{i}") for i, k in enumerate(right_keys)]
    ldf = left.df.select(*keys_l, F.lit(0).alias("_side"), lstruct.alias("_l"),
                         F.lit(None).cast(rstruct_type(right)).alias("_r"), F.lit("+I").alias(ROWKIND),
                         F.expr(millis_sql(f"`{lcols[left_time]}`")).alias(TIME_MS))
    rkind = F.col(ROWKIND) if right.updating else F.lit("+I")
    rdf = right.df.select(*keys_r, F.lit(1).alias("_side"), F.lit(None).cast(rstruct_type(left)).alias("_l"),
                          rstruct.alias("_r"), rkind.alias(ROWKIND),
                          F.expr(millis_sql(f"`{rcols[right_time]}`")).alias(TIME_MS))
    union = ldf.unionByName(rdf)
    fields = [StructField(f"_o{i}", f.dataType, True) for i, f in enumerate(
        left.df.select(*lcols).schema.fields + right.df.select(*rcols).schema.fields)]
    processor = _processor_class()(n, m, outer, json_state)
    out = run_with_state(union, [F.col(f"_k{i}") for i in range(len(left_keys))], processor, StructType(fields))
    result = out.select(*[F.col(f"_o{i}").alias(column_name(i)) for i in range(n + m)])
    if non_equi_condition is not None:
        result = result.filter(F.expr(render_spark_sql(non_equi_condition, [column_name(i) for i in range(n + m)])))
    return Stream(result, left.fields + right.fields)


def rstruct_type(stream: Stream) -> Any:
    from pyspark.sql.types import StructType  # noqa: PLC0415 — pyspark is an optional extra

    return StructType(list(stream.df.select(*stream.columns).schema.fields))
