"""Window value classes: window TVF / group-window strategies and OVER frames.

They are plain data shared by the logical plan, the exec nodes (which write them into the plan JSON) and the
runtime's window operators, so they live below all three.

>>> import datetime as dt
>>> spec = WindowSpec("HOP", 3, size=dt.timedelta(minutes=1), slide=dt.timedelta(seconds=10))
>>> str(spec)
'HOP(time_col=[$3], size=[60000 ms], slide=[10000 ms])'
>>> WindowSpec.from_json(spec.to_json()) == spec
True
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from planengine.ir.types import DataType, timestamp, timestamp_ltz


@dataclass(frozen=True)
class WindowSpec:
    """A windowing strategy: TUMBLE, HOP, CUMULATE or SESSION over a time attribute."""

    kind: str  # TUMBLE | HOP | CUMULATE | SESSION
    time_field: int  # index in the input row
    size: dt.timedelta | None = None  # TUMBLE/HOP/CUMULATE (max size for CUMULATE)
    slide: dt.timedelta | None = None  # HOP
    step: dt.timedelta | None = None  # CUMULATE
    gap: dt.timedelta | None = None  # SESSION
    offset: dt.timedelta | None = None
    partition_keys: tuple[int, ...] = ()  # SESSION ... PARTITION BY
    is_rowtime: bool = True

    def __str__(self) -> str:
        def ms(d: dt.timedelta | None) -> str:
            return f"{int(d / dt.timedelta(milliseconds=1))} ms" if d is not None else ""

        parts = [f"time_col=[${self.time_field}]"]
        for label, value in (("size", self.size), ("slide", self.slide), ("step", self.step), ("gap", self.gap),
                             ("offset", self.offset)):
            if value is not None:
                parts.append(f"{label}=[{ms(value)}]")
        if self.partition_keys:
            parts.append("partition=[" + ", ".join(f"${k}" for k in self.partition_keys) + "]")
        return f"{self.kind}({', '.join(parts)})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"strategy": self.kind, "timeAttributeIndex": self.time_field,
                               "isRowtime": self.is_rowtime}
        for key, value in (("size", self.size), ("slide", self.slide), ("step", self.step), ("gap", self.gap),
                           ("offset", self.offset)):
            if value is not None:
                out[key] = f"PT{value.total_seconds():g}S"
        if self.partition_keys:
            out["partitionKeys"] = list(self.partition_keys)
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> WindowSpec:
        def dur(key: str) -> dt.timedelta | None:
            v = data.get(key)
            return None if v is None else dt.timedelta(seconds=float(v[2:-1]))

        return WindowSpec(
            kind=data["strategy"],
            time_field=data["timeAttributeIndex"],
            size=dur("size"),
            slide=dur("slide"),
            step=dur("step"),
            gap=dur("gap"),
            offset=dur("offset"),
            partition_keys=tuple(data.get("partitionKeys", [])),
            is_rowtime=data.get("isRowtime", True),
        )


@dataclass(frozen=True)
class GroupWindow:
    """Legacy group window (GROUP BY TUMBLE/HOP/SESSION(ts, …)) with the properties SELECT asks for."""

    spec: WindowSpec
    # (name, property) pairs, property in start|end|rowtime|proctime
    properties: tuple[tuple[str, str], ...] = ()
    time_type: DataType | None = None

    def property_fields(self) -> list[tuple[str, DataType]]:
        base = self.time_type or timestamp(3)
        plain = (timestamp_ltz(3) if base.kind.value == "TIMESTAMP_LTZ" else timestamp(3)).with_nullable(False)
        out = []
        for name, prop in self.properties:
            if prop == "rowtime" or prop == "proctime":
                out.append((name, base.with_nullable(False)))
            else:
                out.append((name, plain))
        return out

    def __str__(self) -> str:
        props = ", ".join(f"{p}={n}" for n, p in self.properties)
        return f"{self.spec}" + (f", properties=[{props}]" if props else "")


@dataclass(frozen=True)
class OverFrame:
    mode: str  # ROWS | RANGE
    lower: int | dt.timedelta | None  # None = UNBOUNDED PRECEDING; 0 = CURRENT ROW; n rows or interval preceding
    upper: int | None = 0  # only CURRENT ROW supported for streaming

    def __str__(self) -> str:
        if self.lower is None:
            low = "UNBOUNDED PRECEDING"
        elif isinstance(self.lower, dt.timedelta):
            low = f"{int(self.lower / dt.timedelta(milliseconds=1))} ms PRECEDING"
        elif self.lower == 0:
            low = "CURRENT ROW"
        else:
            low = f"{self.lower} PRECEDING"
        return f"{self.mode} BETWEEN {low} AND CURRENT ROW"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode}
        if isinstance(self.lower, dt.timedelta):
            out["lowerMillis"] = int(self.lower / dt.timedelta(milliseconds=1))
        elif self.lower is not None:
            out["lowerRows"] = self.lower
        else:
            out["lowerUnbounded"] = True
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> OverFrame:
        if "lowerMillis" in data:
            lower: int | dt.timedelta | None = dt.timedelta(milliseconds=data["lowerMillis"])
        elif "lowerRows" in data:
            lower = data["lowerRows"]
        else:
            lower = None
        return OverFrame(data["mode"], lower)
