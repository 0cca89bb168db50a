"""Values between pandas, Python and state.

Rows travel inside the processors as Python tuples with exact values (``int``, ``Decimal``, ``datetime``).
Spark hands ``transformWithStateInPandas`` pandas frames, where a nullable integer column arrives as
``float64`` with ``NaN`` and timestamps as ``pd.Timestamp``; ``frame_rows`` undoes that per Flink type.
State keeps rows as canonical JSON text (``encode``/``decode``) with tagged Decimal/date/time/bytes values,
so the state data source shows readable rows and equal rows have equal text (usable as MapState keys).

``dump_state``/``load_state`` are the *versioned state codec* (format ``STATE_FORMAT``) for operators that keep
whole Python values (buffers of rows, per-window lists, user aggregate accumulators) rather than rows: the same
tagged canonical JSON, made lossless for what ``encode`` flattens (tuples, ``Row``, sets, maps with non-string
keys, NaN/±Infinity) so a value comes back as the type it was. It replaces pickles, which tie a snapshot to the
Python and class internals of the engine that wrote it. The format number is kept with every value
(``window_state.JsonValue``); a value of an unknown format is refused, never guessed at.

>>> text = dump_state({"last": 5, "rows": [(1, ("a", decimal.Decimal("1.50"), None))], (1, 2): {3}})
>>> text
'{"$map":[["last",5],["rows",[{"$t":[1,{"$t":["a",{"$d":"1.50"},null]}]}]],[{"$t":[1,2]},{"$set":[3]}]]}'
>>> load_state(text) == {"last": 5, "rows": [(1, ("a", decimal.Decimal("1.50"), None))], (1, 2): {3}}
True
>>> load_state(dump_state([float("nan")]))[0] != 0
True
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from planengine.ir.types import DataType, Kind

INTEGRAL = (Kind.TINYINT, Kind.SMALLINT, Kind.INT, Kind.BIGINT)
FLOATING = (Kind.FLOAT, Kind.DOUBLE)
TIMESTAMPS = (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ)


# --- JSON text for state ---------------------------------------------------------------------------------
def _default(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        return {"$d": str(v)}
    if isinstance(v, dt.datetime):
        return {"$ts": v.isoformat()}
    if isinstance(v, dt.date):
        return {"$date": v.isoformat()}
    if isinstance(v, dt.time):
        return {"$time": v.isoformat()}
    if isinstance(v, dt.timedelta):
        return {"$td": [v.days, v.seconds, v.microseconds]}
    if isinstance(v, bytes | bytearray):
        return {"$b": bytes(v).hex()}
    if isinstance(v, tuple):
        return list(v)
    if hasattr(v, "item"):  # numpy scalar
        return v.item()
    if hasattr(v, "tolist"):  # numpy array
        return v.tolist()
    raise TypeError(f"cannot keep {type(v).__name__} in operator state")


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


_TAGS: dict[str, Callable[[Any], Any]] = {
    "$d": decimal.Decimal,
    "$ts": dt.datetime.fromisoformat,
    "$date": dt.date.fromisoformat,
    "$time": dt.time.fromisoformat,
    "$td": lambda v: dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2]),
    "$b": bytes.fromhex,
    "$map": lambda pairs: {_hashable(k): v for k, v in pairs},  # written by encode_keyed
}


def _hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        (k, v), = obj.items()
        tag = _TAGS.get(k)
        if tag is not None:
            return tag(v)
    return obj


# --- the versioned state codec (lossless tagged JSON) ------------------------------------------------------
STATE_FORMAT = 1
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _text_key(tagged: Any) -> str:
    return json.dumps(tagged, separators=(",", ":"), sort_keys=True)


def _tag(v: Any) -> Any:
    """``v`` as plain JSON data: containers tagged where JSON would lose their type, scalars as ``encode`` does."""
    if v is None or isinstance(v, bool | str | int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"$f": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(v, list):
        return [_tag(x) for x in v]
    if isinstance(v, tuple):
        fields = getattr(v, "__fields__", None)  # pyspark.sql.Row with field names (a tuple subclass)
        if fields is not None:
            return {"$row": [list(fields), [_tag(x) for x in v]]}
        return {"$t": [_tag(x) for x in v]}
    if isinstance(v, dict):
        plain = all(isinstance(k, str) for k in v) and not (len(v) == 1 and next(iter(v)).startswith("$"))
        if plain:
            return {k: _tag(x) for k, x in v.items()}
        return {"$map": sorted(([_tag(k), _tag(x)] for k, x in v.items()), key=lambda kv: _text_key(kv[0]))}
    if isinstance(v, set | frozenset):
        return {"$set" if isinstance(v, set) else "$fset": sorted((_tag(x) for x in v), key=_text_key)}
    return _default(v)  # Decimal, date/time, timedelta, bytes, numpy scalars; TypeError otherwise


def _row(fields_values: list[Any]) -> Any:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra (only state holding Rows needs it)

    names, values = fields_values
    return Row(**dict(zip(names, values, strict=True)))


_STATE_TAGS: dict[str, Callable[[Any], Any]] = {
    **_TAGS,
    "$t": tuple,
    "$row": _row,
    "$map": dict,  # [[key, value], …]
    "$set": set,
    "$fset": frozenset,
    "$f": _NON_FINITE.__getitem__,
}


def _state_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        (k, v), = obj.items()
        tag = _STATE_TAGS.get(k)
        if tag is not None:
            return tag(v)
    return obj


def dump_state(value: Any) -> str:
    """Canonical tagged JSON text of ``value`` (format ``STATE_FORMAT``); strict JSON, no NaN tokens.

    Raises ``TypeError`` naming the type for a value the format cannot represent (e.g. an instance of a user
    class): the caller says which operator or function kept it and what to change."""
    return json.dumps(_tag(value), separators=(",", ":"), sort_keys=True, allow_nan=False)


def load_state(text: str) -> Any:
    """The value ``dump_state`` wrote, with its Python types (tuples, sets, non-string keys, Decimal, …)."""
    return json.loads(text, object_hook=_state_hook)


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def encode(value: Any) -> str:
    """Canonical JSON text of a value (rows are tuples → arrays)."""
    return json.dumps(value, default=_default, separators=(",", ":"), sort_keys=True, allow_nan=True)


def _keyed(v: Any) -> Any:
    """``v`` with every dict whose keys are not all strings as ``{"$map": [[key, value], …]}`` (pairs in the order
    of their keys' text), so JSON keeps the keys' types; string-keyed dicts stay plain objects."""
    if isinstance(v, dict):
        if all(type(k) is str for k in v) and not (len(v) == 1 and next(iter(v)).startswith("$")):
            return {k: _keyed(x) for k, x in v.items()}
        return {"$map": sorted(([_keyed(k), _keyed(x)] for k, x in v.items()), key=lambda kv: encode(kv[0]))}
    if isinstance(v, list | tuple):
        return [_keyed(x) for x in v]
    return v


def encode_keyed(value: Any) -> str:
    """``encode`` for values that may hold MAPs with non-string keys: plain JSON would turn ``{1: "a"}`` into
    ``{"1": "a"}`` (the row then fails Spark's Arrow conversion when it leaves state, and ``9`` sorts after
    ``10``), and refuses DECIMAL or DATE keys. Same text as ``encode`` for values without such maps.

    >>> encode_keyed((7, {10: "b", 9: "a"}))
    '[7,{"$map":[[10,"b"],[9,"a"]]}]'
    >>> decode_row(encode_keyed((7, {10: "b", 9: "a"}))) == (7, {9: "a", 10: "b"})
    True
    """
    return encode(_keyed(value))


def state_encoder(types: Sequence[DataType]) -> Callable[[Any], str]:
    """The encoder for state holding values of ``types``: ``encode_keyed`` where a MAP with non-string keys occurs
    (its walk costs time on every row, so only those operators pay it), else ``encode``. ``decode`` reads both."""
    return encode_keyed if any(t.has_non_string_map_key for t in types) else encode


def decode(text: str) -> Any:
    return json.loads(text, object_hook=_hook)


def decode_row(text: str) -> tuple[Any, ...]:
    """A row encoded by ``encode(tuple)``; nested arrays come back as tuples (rows are hashable)."""
    return _tuples(json.loads(text, object_hook=_hook))


# --- pandas in --------------------------------------------------------------------------------------------
def _is_missing(v: Any) -> bool:
    return v is None or v is pd.NaT or (isinstance(v, float) and math.isnan(v))


def _integral(v: Any) -> Any:
    return None if _is_missing(v) else int(v)


def _floating(v: Any) -> Any:
    # Spark's Arrow conversion turns SQL NULL into NaN for floating columns; NULL is the common case.
    return None if _is_missing(v) else float(v)


def _timestamp(v: Any) -> Any:
    if _is_missing(v):
        return None
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    return v


def _nested(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "tolist") and not isinstance(v, str | bytes):
        return _tuples(v.tolist())
    if isinstance(v, list):
        return _tuples(v)
    if isinstance(v, dict):
        return v
    return v


def _plain(v: Any) -> Any:
    if v is None or v is pd.NaT:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item") and not isinstance(v, str | bytes):
        return v.item()
    return v


def converter(t: DataType) -> Callable[[Any], Any]:
    k = t.kind
    if k in INTEGRAL:
        return _integral
    if k in FLOATING:
        return _floating
    if k in TIMESTAMPS:
        return _timestamp
    if k is Kind.BOOLEAN:
        return lambda v: None if _is_missing(v) else bool(v)
    if k in (Kind.ARRAY, Kind.ROW, Kind.MULTISET, Kind.MAP):
        return _nested
    return _plain


def frame_rows(pdf: pd.DataFrame, positions: Sequence[int], converters: Sequence[Callable[[Any], Any]]
               ) -> list[tuple[Any, ...]]:
    """The frame's columns at ``positions`` as exact Python tuples, in frame order.

    Columns are addressed by position: Spark renames frame columns whose name starts with ``_``.
    """
    if not len(pdf):
        return []
    lists = [[conv(v) for v in pdf.iloc[:, p].tolist()] for p, conv in zip(positions, converters, strict=True)]
    return list(zip(*lists, strict=True))


# --- pandas out -------------------------------------------------------------------------------------------
def coerce(value: Any, t: DataType) -> Any:
    """A computed value in the Python representation of its Flink type (e.g. ``AVG`` of INT is an int)."""
    if value is None:
        return None
    k = t.kind
    if k in INTEGRAL:
        return int(value)
    if k in FLOATING:
        return float(value)
    if k is Kind.DECIMAL:
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        return d.quantize(decimal.Decimal(1).scaleb(-(t.scale or 0)), rounding=decimal.ROUND_HALF_UP)
    return value


def rows_frame(rows: Sequence[tuple[Any, ...]], columns: Sequence[str], types: Sequence[DataType | None]
               ) -> pd.DataFrame:
    """A frame Spark converts to the output schema without losing precision (object columns)."""
    data: dict[str, Any] = {}
    for i, (c, t) in enumerate(zip(columns, types, strict=True)):
        values = [r[i] for r in rows]
        if t is not None and t.kind in TIMESTAMPS:
            data[c] = pd.Series(pd.to_datetime(values), dtype="datetime64[ns]") if values else pd.Series(
                [], dtype="datetime64[ns]")
        elif t is not None and t.kind in (Kind.MAP, Kind.MULTISET):
            data[c] = pd.Series([_map_value(v, t) for v in values], dtype=object)
        elif t is not None and t.kind in (Kind.ARRAY,):
            data[c] = pd.Series([None if v is None else list(v) for v in values], dtype=object)
        elif t is not None and t.kind is Kind.ROW:
            data[c] = pd.Series([_row_value(v, t) for v in values], dtype=object)
        else:
            data[c] = pd.Series(values, dtype=object)
    return pd.DataFrame(data, columns=list(columns))


_KEY_FROM_TEXT: dict[Kind, Callable[[str], Any]] = {
    **dict.fromkeys(INTEGRAL, int), **dict.fromkeys(FLOATING, float), Kind.DECIMAL: decimal.Decimal,
    Kind.BOOLEAN: lambda k: k == "true",
}


def _map_value(v: Any, t: DataType) -> Any:
    """A MAP/MULTISET value as the dict Spark's Arrow conversion takes. Keys that are strings where the key type
    is not come from state written before ``encode_keyed`` (plain JSON made ``{1: "a"}`` ``{"1": "a"}``): they are
    read back as the key type, so such a job's rows can leave state again."""
    if v is None:
        return None
    d = dict(v)
    key = t.key if t.kind is Kind.MAP else t.element
    from_text = None if key is None else _KEY_FROM_TEXT.get(key.kind)
    if from_text is not None and any(isinstance(k, str) for k in d):
        return {from_text(k) if isinstance(k, str) else k: x for k, x in d.items()}
    return d


def _row_value(v: Any, t: DataType) -> Any:
    """A ROW value as the field-name dict Spark's Arrow conversion takes.

    Computed rows are tuples; a ROW read from Spark's frames (or back from state) is already a dict — zipping
    the field names with it would pair each name with a name. A dict whose keys are not the field names
    (a renamed ROW type) is taken by position.
    """
    if v is None:
        return None
    names = t.field_names()
    if isinstance(v, dict):
        return v if set(v) == set(names) else dict(zip(names, v.values(), strict=False))
    return dict(zip(names, v, strict=False))
