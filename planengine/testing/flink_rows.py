"""Flink's ``Row.toString`` form: ``+U[2, 2.0, Hello]``, formatted from typed values and parsed back.

Formatting follows the Java types Flink's rows hold: ``Double.toString`` / ``Float.toString`` (``42.0``,
``1.0E7``, ``1.0E-4``), ``LocalDateTime.toString`` for TIMESTAMP (seconds dropped when zero:
``2020-10-10T00:00``), ``Instant.toString`` for TIMESTAMP_LTZ (``2020-10-10T00:00:00Z``), ``BigDecimal``
keeps its scale (``4.00``), nested rows print as ``+I[…]``, arrays ``[…]``, maps ``{k=v}``, nulls ``null``.

>>> format_row("+U", [2, 2.0, "Hello", None])
'+U[2, 2.0, Hello, null]'
>>> java_double(1e7), java_double(0.0001), java_double(42.0), java_float(0.1)
('1.0E7', '1.0E-4', '42.0', '0.1')
>>> parse_row("+I[1, [a, b], {k=v}, x]")
('+I', ('1', '[a, b]', '{k=v}', 'x'))
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from typing import Any

from planengine.ir.types import DataType, Kind

_ROW_RE = re.compile(r"^\s*([+-][IUD])\[(.*)\]\s*$", re.S)


# --- Java number and time formatting ----------------------------------------------------------------------
def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _java_scientific(text: str, x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    d = decimal.Decimal(text)
    sign, digits, exp = d.normalize().as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exponent = len("".join(map(str, digits))) - 1 + int(exp)
    minus = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        plain = format(abs(d).normalize(), "f")
        if "." not in plain:
            plain += ".0"
        return minus + plain
    return f"{minus}{ds[0]}.{ds[1:] or '0'}E{exponent}"


def java_double(x: float) -> str:
    """``Double.toString`` (shortest round-trip digits, Java's plain/scientific thresholds)."""
    return _java_scientific(repr(float(x)), float(x))


def java_float(x: float) -> str:
    """``Float.toString`` of the float32 nearest ``x`` (shortest digits that round-trip in float32)."""
    x = float(x)
    if math.isnan(x) or math.isinf(x) or x == 0:
        return _java_scientific("0", x)
    target = _f32(x)
    text = repr(target)
    for p in range(1, 10):
        candidate = f"{target:.{p}g}"
        if _f32(float(candidate)) == target:
            text = candidate
            break
    return _java_scientific(text, target)


def _fraction(micro_or_nano: int, digits: int) -> str:
    """Java's fraction printing: 3, 6 or 9 digits, whichever is exact (``digits`` = 6 or 9 given)."""
    nanos = micro_or_nano * (1000 if digits == 6 else 1)
    if nanos == 0:
        return ""
    if nanos % 1_000_000 == 0:
        return f".{nanos // 1_000_000:03d}"
    if nanos % 1000 == 0:
        return f".{nanos // 1000:06d}"
    return f".{nanos:09d}"


def local_date_time(v: dt.datetime, nanos: int | None = None) -> str:
    """``LocalDateTime.toString``: ``2020-10-10T00:00`` (seconds only when non-zero or with a fraction)."""
    frac = _fraction(nanos, 9) if nanos is not None else _fraction(v.microsecond, 6)
    text = f"{v:%Y-%m-%dT%H:%M}"
    if v.second or frac:
        text += f":{v.second:02d}"
    return text + frac


def instant(v: dt.datetime) -> str:
    """``Instant.toString`` (UTC, seconds always printed): ``1970-01-01T00:00:00Z``."""
    if v.tzinfo is not None:
        v = v.astimezone(dt.UTC).replace(tzinfo=None)
    return f"{v:%Y-%m-%dT%H:%M:%S}" + _fraction(v.microsecond, 6) + "Z"


_TS_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$")


def parse_timestamp(text: str) -> tuple[dt.datetime, int, bool]:
    """``(datetime truncated to micros, nanos of second, had a zone)`` from ISO-like text (Java or Spark)."""
    m = _TS_RE.match(text.strip())
    if not m:
        raise ValueError(f"not a timestamp: {text!r}")
    day, hh, mm, ss, frac, zone = m.groups()
    nanos = int((frac or "").ljust(9, "0") or 0)
    value = dt.datetime.fromisoformat(f"{day}T{hh}:{mm}:{ss or '00'}").replace(microsecond=nanos // 1000)
    if zone and zone != "Z":
        offset = dt.datetime.strptime(zone.replace(":", ""), "%z").utcoffset()
        value = value - offset  # type: ignore[operator]
    return value, nanos, zone is not None


# --- values ------------------------------------------------------------------------------------------------
def format_value(v: Any, t: DataType | None = None) -> str:
    """One field as Flink prints it; ``t`` (the column's type) decides number and timestamp styles."""
    if v is None:
        return "null"
    kind = t.kind if t is not None else None
    if isinstance(v, bool):
        return "true" if v else "false"
    if kind in (Kind.DOUBLE, Kind.FLOAT) and isinstance(v, int | float | decimal.Decimal | str):
        try:
            number = float(v)
        except ValueError:
            return str(v)
        return java_float(number) if kind is Kind.FLOAT else java_double(number)
    if kind is Kind.DECIMAL and isinstance(v, int | float | decimal.Decimal) and t is not None:
        d = decimal.Decimal(str(v)) if not isinstance(v, decimal.Decimal) else v
        if t.scale is not None:
            d = d.quantize(decimal.Decimal(1).scaleb(-t.scale))
        return format(d, "f")
    if kind in (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ) and isinstance(v, str | dt.datetime):
        if isinstance(v, str):
            try:
                value, nanos, _ = parse_timestamp(v)
            except ValueError:
                return v
        else:
            value, nanos = v, None
        return instant(value) if kind is Kind.TIMESTAMP_LTZ else local_date_time(value, nanos)
    if kind is Kind.DATE and isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, dt.datetime):
        return instant(v) if v.tzinfo is not None else local_date_time(v)
    if isinstance(v, dict) and kind is Kind.ROW and t is not None:
        return format_row("+I", [v.get(f.name) for f in t.fields], [f.type for f in t.fields])
    if isinstance(v, list | tuple):
        if kind is Kind.ROW and t is not None:
            return format_row("+I", list(v), [f.type for f in t.fields])
        element = t.element if t is not None else None
        return "[" + ", ".join(format_value(x, element) for x in v) + "]"
    if isinstance(v, dict):
        kt = t.key if t is not None else None
        vt = t.value if t is not None else None
        return "{" + ", ".join(f"{format_value(k, kt)}={format_value(x, vt)}" for k, x in v.items()) + "}"
    if hasattr(v, "asDict"):  # a Spark Row
        types = [f.type for f in t.fields] if t is not None and kind is Kind.ROW else None
        return format_row("+I", list(v), types)
    return str(v)


def format_fields(values: list[Any], types: list[DataType] | None = None) -> tuple[str, ...]:
    types = types or []
    return tuple(format_value(v, types[i] if i < len(types) else None) for i, v in enumerate(values))


def format_row(kind: str, values: list[Any], types: list[DataType] | None = None) -> str:
    """``+I[1, a]`` from typed values (``types`` aligned with ``values`` when given)."""
    return f"{kind}[" + ", ".join(format_fields(values, types)) + "]"


# --- parsing -----------------------------------------------------------------------------------------------
def split_fields(body: str) -> tuple[str, ...]:
    """Top-level ``, `` separated fields (brackets and braces nest). A string field holding ``", "`` splits
    too: callers that know the column count should check it."""
    if body == "":
        return ()
    out, depth, start, i = [], 0, 0, 0
    while i < len(body):
        c = body[i]
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0 and body[i + 1:i + 2] == " ":
            out.append(body[start:i])
            start = i + 2
            i += 1
        i += 1
    out.append(body[start:])
    return tuple(out)


def parse_row(text: str) -> tuple[str, tuple[str, ...]]:
    """``("+U", ("2", "2.0", "Hello"))`` from ``+U[2, 2.0, Hello]``."""
    m = _ROW_RE.match(text)
    if not m:
        raise ValueError(f"not a Flink row string: {text!r}")
    return m.group(1), split_fields(m.group(2))
