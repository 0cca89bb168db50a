"""Option values as users write them (Flink's syntax) and the typed parsers that read them.

Shared by session options (``planengine.config``) and connector options (``planengine.connectors.options``),
so ``'10 s'`` means the same everywhere and every parser explains a failure in words that complete
"expected …".

>>> parse_duration_ms("10 s"), parse_duration_ms("5min"), parse_duration_ms("1 h"), parse_duration_ms("100ms")
(10000, 300000, 3600000, 100)
>>> parse_memory_bytes("4 mb")
4194304
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


# --- value parsers ----------------------------------------------------------------------------------
_DURATION_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "m": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_MEMORY_UNITS = {
    "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}
_AMOUNT = re.compile(r"^\s*(\d+)\s*([A-Za-z]*)\s*$")


def parse_duration_ms(text: str) -> int:
    """Flink's duration syntax (``'10 s'``, ``'5min'``, ``'1 h'``, ``'100ms'``; a bare number is ms) to ms."""
    m = _AMOUNT.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _DURATION_UNITS_MS):
        raise ValueError("a duration such as '100 ms', '10 s', '5 min', '1 h' or '1 d'")
    return int(m.group(1)) * (_DURATION_UNITS_MS[unit] if unit else 1)


def parse_memory_bytes(text: str) -> int:
    """Flink's memory-size syntax (``'64 mb'``, ``'1g'``, binary multiples; a bare number is bytes)."""
    m = _AMOUNT.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _MEMORY_UNITS):
        raise ValueError("a memory size such as '512 kb', '64 mb' or '1 gb'")
    return int(m.group(1)) * (_MEMORY_UNITS[unit] if unit else 1)


def format_duration_ms(ms: int) -> str:
    """The shortest exact rendering of a duration (used for documented defaults)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


@dataclass(frozen=True)
class OptionType(Generic[T]):
    """How to read one option value: a name for documentation and a parser that explains failures.

    ``parse`` raises ``ValueError`` whose message completes the sentence "expected …".
    """

    name: str
    parse: Callable[[str], T]
    allowed_values: tuple[str, ...] = ()


def _parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("an integer") from None


def _parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError("a number") from None


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("'true' or 'false'")
    return lowered == "true"


STRING: OptionType[str] = OptionType("String", lambda s: s)


def _parse_path(text: str) -> str:
    """A file-system path or URI: not empty or blank, no NUL byte, no surrounding blanks (files would land
    somewhere other than where the user looks)."""
    if not text.strip():
        raise ValueError("a non-empty path or URI")
    if "\x00" in text:
        raise ValueError("a path without NUL bytes")
    if text != text.strip():
        raise ValueError("a path without leading or trailing blanks")
    return text


PATH: OptionType[str] = OptionType("Path", _parse_path)
INT: OptionType[int] = OptionType("Integer", _parse_int)
FLOAT: OptionType[float] = OptionType("Double", _parse_float)
BOOL: OptionType[bool] = OptionType("Boolean", _parse_bool)
DURATION: OptionType[int] = OptionType("Duration", parse_duration_ms)
MEMORY: OptionType[int] = OptionType("MemorySize", parse_memory_bytes)


def enum_type(*values: str) -> OptionType[str]:
    """Case-insensitive choice; the parsed value is the canonical spelling given here."""
    canonical = {v.lower(): v for v in values}

    def parse(text: str) -> str:
        try:
            return canonical[text.strip().lower()]
        except KeyError:
            raise ValueError("one of " + ", ".join(f"'{v}'" for v in values)) from None

    return OptionType("Enum", parse, tuple(values))


def list_type(element: OptionType[Any], separator: str = ";") -> OptionType[list[Any]]:
    """Flink lists are ``;``-separated (``'key.fields' = 'a;b'``)."""

    def parse(text: str) -> list[Any]:
        items = [part.strip() for part in text.split(separator) if part.strip()]
        try:
            return [element.parse(item) for item in items]
        except ValueError as e:
            raise ValueError(f"a '{separator}'-separated list of {e}") from None

    return OptionType(f"List<{element.name}>", parse, element.allowed_values)


def positive(base: OptionType[int]) -> OptionType[int]:
    def parse(text: str) -> int:
        value = base.parse(text)
        if value <= 0:
            raise ValueError(f"a positive {base.name.lower()}")
        return value

    return OptionType(base.name, parse)


def non_negative(base: OptionType[Any]) -> OptionType[Any]:
    def parse(text: str) -> Any:
        value = base.parse(text)
        if value < 0:
            raise ValueError(f"a non-negative {base.name.lower()}")
        return value

    return OptionType(base.name, parse)
