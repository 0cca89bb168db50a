"""Logical types with one canonical string form.

Plans store types as strings (DESIGN §3), so the string form *is* the serialization: ``str(t)`` renders
it and ``parse_type(s)`` reads it back, and ``parse_type(str(t)) == t`` for every type. The grammar is
Flink's type syntax (``DECIMAL(10, 2) NOT NULL``, ``ROW<`a` INT, `b` STRING>``, ``TIMESTAMP_LTZ(3)``),
plus the plan-only markers ``*ROWTIME*`` / ``*PROCTIME*`` for time attributes.

>>> t = parse_type("ROW<`id` BIGINT NOT NULL, `tags` ARRAY<STRING>, `ts` TIMESTAMP(3) *ROWTIME*>")
>>> str(t.fields[2].type), t.fields[0].type.nullable
('TIMESTAMP(3) *ROWTIME*', False)
>>> parse_type("varchar(2147483647)") == STRING
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum

from planengine.errors import ValidationError

MAX_LENGTH = 2147483647


class Kind(StrEnum):
    BOOLEAN = "BOOLEAN"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    CHAR = "CHAR"
    VARCHAR = "VARCHAR"
    BINARY = "BINARY"
    VARBINARY = "VARBINARY"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMP_LTZ = "TIMESTAMP_LTZ"
    INTERVAL_DAY_TIME = "INTERVAL DAY TO SECOND"
    INTERVAL_YEAR_MONTH = "INTERVAL YEAR TO MONTH"
    ARRAY = "ARRAY"
    MULTISET = "MULTISET"
    MAP = "MAP"
    ROW = "ROW"
    NULL = "NULL"
    DESCRIPTOR = "DESCRIPTOR"  # the DESCRIPTOR(col) argument of window TVFs; never a column type


INTEGRAL = (Kind.TINYINT, Kind.SMALLINT, Kind.INT, Kind.BIGINT)
NUMERIC = (*INTEGRAL, Kind.FLOAT, Kind.DOUBLE, Kind.DECIMAL)
CHARACTER = (Kind.CHAR, Kind.VARCHAR)
BINARY_STRING = (Kind.BINARY, Kind.VARBINARY)
DATETIME = (Kind.DATE, Kind.TIME, Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ)
TIMESTAMPS = (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ)


class TimeAttribute(StrEnum):
    ROWTIME = "ROWTIME"
    PROCTIME = "PROCTIME"


@dataclass(frozen=True)
class RowField:
    name: str
    type: DataType
    description: str | None = None


@dataclass(frozen=True)
class DataType:
    """An immutable logical type. Build with the constructors below, not directly."""

    kind: Kind
    nullable: bool = True
    precision: int | None = None  # DECIMAL precision, TIME/TIMESTAMP fractional precision
    scale: int | None = None  # DECIMAL scale
    length: int | None = None  # CHAR/VARCHAR/BINARY/VARBINARY length
    element: DataType | None = None  # ARRAY / MULTISET
    key: DataType | None = None  # MAP
    value: DataType | None = None  # MAP
    fields: tuple[RowField, ...] = field(default=())  # ROW
    time_attribute: TimeAttribute | None = None

    # --- derived views -------------------------------------------------------------------------
    def with_nullable(self, nullable: bool) -> DataType:
        return self if self.nullable == nullable else replace(self, nullable=nullable)

    def with_time_attribute(self, attribute: TimeAttribute | None) -> DataType:
        return replace(self, time_attribute=attribute)

    def without_time_attribute(self) -> DataType:
        """Time attributes become plain timestamps once materialised (e.g. after an aggregate)."""
        return self if self.time_attribute is None else replace(self, time_attribute=None)

    @property
    def is_rowtime(self) -> bool:
        return self.time_attribute is TimeAttribute.ROWTIME

    @property
    def is_proctime(self) -> bool:
        return self.time_attribute is TimeAttribute.PROCTIME

    @property
    def is_time_attribute(self) -> bool:
        return self.time_attribute is not None

    @property
    def is_numeric(self) -> bool:
        return self.kind in NUMERIC

    @property
    def is_integral(self) -> bool:
        return self.kind in INTEGRAL

    @property
    def is_string(self) -> bool:
        return self.kind in CHARACTER

    @property
    def is_timestamp(self) -> bool:
        return self.kind in TIMESTAMPS

    @property
    def has_non_string_map_key(self) -> bool:
        """Whether a MAP (or MULTISET, a map of its elements) whose key is not a character string occurs anywhere
        in this type. Such keys have no form in JSON objects nor in the Avro schemas Spark derives for typed
        ``transformWithState`` state, so state stores and encoders treat them apart.

        >>> parse_type("ROW<a MAP<STRING, DOUBLE>, b ARRAY<INT>>").has_non_string_map_key
        False
        >>> parse_type("ROW<a INT, b ARRAY<MAP<DOUBLE, DOUBLE>>>").has_non_string_map_key
        True
        """
        for t in self.walk():
            if t.kind in (Kind.MAP, Kind.MULTISET):
                key = t.key if t.kind is Kind.MAP else t.element
                if key is None or key.kind not in CHARACTER:
                    return True
        return False

    def walk(self) -> Iterator[DataType]:
        """This type and every type nested in it (elements, keys, values, fields), depth first."""
        yield self
        for child in (self.element, self.key, self.value, *(f.type for f in self.fields)):
            if child is not None:
                yield from child.walk()

    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field_index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise KeyError(name)

    # --- canonical string form ----------------------------------------------------------------
    def __str__(self) -> str:
        text = self._base_string()
        if not self.nullable and self.kind is not Kind.NULL:
            text += " NOT NULL"
        if self.time_attribute is not None:
            text += f" *{self.time_attribute.value}*"
        return text

    def _base_string(self) -> str:
        k = self.kind
        if k is Kind.DECIMAL:
            return f"DECIMAL({self.precision}, {self.scale})"
        if k is Kind.VARCHAR:
            return "STRING" if self.length == MAX_LENGTH else f"VARCHAR({self.length})"
        if k is Kind.VARBINARY:
            return "BYTES" if self.length == MAX_LENGTH else f"VARBINARY({self.length})"
        if k in (Kind.CHAR, Kind.BINARY):
            return f"{k.value}({self.length})"
        if k in (Kind.TIME, Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ):
            return f"{k.value}({self.precision})"
        if k in (Kind.ARRAY, Kind.MULTISET):
            return f"{k.value}<{self.element}>"
        if k is Kind.MAP:
            return f"MAP<{self.key}, {self.value}>"
        if k is Kind.ROW:
            parts = []
            for f in self.fields:
                part = f"{quote_identifier(f.name)} {f.type}"
                if f.description:
                    part += " '" + f.description.replace("'", "''") + "'"
                parts.append(part)
            return "ROW<" + ", ".join(parts) + ">"
        return k.value

    def __repr__(self) -> str:
        return f"DataType({self})"


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# --- constructors ---------------------------------------------------------------------------------
def _simple(kind: Kind) -> DataType:
    return DataType(kind)


BOOLEAN = _simple(Kind.BOOLEAN)
TINYINT = _simple(Kind.TINYINT)
SMALLINT = _simple(Kind.SMALLINT)
INT = _simple(Kind.INT)
BIGINT = _simple(Kind.BIGINT)
FLOAT = _simple(Kind.FLOAT)
DOUBLE = _simple(Kind.DOUBLE)
DATE = _simple(Kind.DATE)
NULL = DataType(Kind.NULL)
STRING = DataType(Kind.VARCHAR, length=MAX_LENGTH)
BYTES = DataType(Kind.VARBINARY, length=MAX_LENGTH)
INTERVAL_DAY_TIME = DataType(Kind.INTERVAL_DAY_TIME, precision=3)
INTERVAL_YEAR_MONTH = DataType(Kind.INTERVAL_YEAR_MONTH)
DESCRIPTOR = DataType(Kind.DESCRIPTOR)


def decimal(precision: int, scale: int) -> DataType:
    if not 1 <= precision <= 38 or not 0 <= scale <= precision:
        raise ValidationError(
            f"DECIMAL({precision}, {scale}) is out of range", hint="precision is 1..38 and 0 <= scale <= precision"
        )
    return DataType(Kind.DECIMAL, precision=precision, scale=scale)


def varchar(length: int = MAX_LENGTH) -> DataType:
    return DataType(Kind.VARCHAR, length=length)


def char(length: int = 1) -> DataType:
    return DataType(Kind.CHAR, length=length)


def time(precision: int = 0) -> DataType:
    return DataType(Kind.TIME, precision=precision)


def timestamp(precision: int = 6) -> DataType:
    return DataType(Kind.TIMESTAMP, precision=precision)


def timestamp_ltz(precision: int = 6) -> DataType:
    return DataType(Kind.TIMESTAMP_LTZ, precision=precision)


def array(element: DataType) -> DataType:
    return DataType(Kind.ARRAY, element=element)


def multiset(element: DataType) -> DataType:
    return DataType(Kind.MULTISET, element=element)


def map_(key: DataType, value: DataType) -> DataType:
    return DataType(Kind.MAP, key=key, value=value)


def row(*fields: tuple[str, DataType] | RowField) -> DataType:
    built = tuple(f if isinstance(f, RowField) else RowField(f[0], f[1]) for f in fields)
    return DataType(Kind.ROW, fields=built)


# --- parsing --------------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"\s*(?:(?P<quoted>`(?:[^`]|``)*`)|(?P<string>'(?:[^']|'')*')|(?P<marker>\*(?:ROWTIME|PROCTIME)\*)"
    r"|(?P<number>\d+)|(?P<word>[A-Za-z_][A-Za-z0-9_$]*)|(?P<punct>[<>(),:]))"
)

_ALIASES = {
    "INTEGER": Kind.INT,
    "INT": Kind.INT,
    "BOOL": Kind.BOOLEAN,
    "BOOLEAN": Kind.BOOLEAN,
    "TINYINT": Kind.TINYINT,
    "SMALLINT": Kind.SMALLINT,
    "BIGINT": Kind.BIGINT,
    "FLOAT": Kind.FLOAT,
    "REAL": Kind.FLOAT,
    "DOUBLE": Kind.DOUBLE,
    "DATE": Kind.DATE,
    "NULL": Kind.NULL,
    "DESCRIPTOR": Kind.DESCRIPTOR,
}


class _TypeParser:
    """Recursive descent over the type grammar; tiny on purpose (types, not SQL)."""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                self.fail(f"unexpected character {text[pos:].lstrip()[:1]!r}", pos)
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, message: str, pos: int | None = None) -> None:
        if pos is None:
            pos = self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)
        raise ValidationError(
            f"cannot parse type {self.text!r}: {message} at position {pos + 1}",
            hint="types look like INT, STRING, DECIMAL(10, 2) NOT NULL, TIMESTAMP(3), ARRAY<INT>, "
            "MAP<STRING, INT>, ROW<`a` INT, `b` STRING>",
        )

    def peek(self) -> str | None:
        return self.tokens[self.i][1].upper() if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        if self.i >= len(self.tokens):
            self.fail("unexpected end")
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def accept(self, word: str) -> bool:
        if self.peek() == word:
            self.i += 1
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.accept(word):
            self.fail(f"expected {word!r}")

    def number(self) -> int:
        kind, value, _ = self.take()
        if kind != "number":
            self.i -= 1
            self.fail("expected a number")
        if len(value) > 10:  # a length or precision beyond INT (and beyond what int() converts, at 4300 digits)
            self.i -= 1
            self.fail("expected a number of at most 10 digits")
        return int(value)

    def parens(self, count: int) -> list[int]:
        """Optional `(n[, m])` returning the numbers given."""
        if not self.accept("("):
            return []
        values = [self.number()]
        while len(values) < count and self.accept(","):
            values.append(self.number())
        self.expect(")")
        return values

    def parse(self) -> DataType:
        t = self.parse_type()
        if self.i != len(self.tokens):
            self.fail(f"unexpected {self.tokens[self.i][1]!r}")
        return t

    def parse_type(self) -> DataType:
        kind, value, _ = self.take()
        if kind != "word":
            self.i -= 1
            self.fail("expected a type name")
        word = value.upper()
        t = self._base(word)
        if self.accept("NOT"):
            self.expect("NULL")
            t = t.with_nullable(False)
        elif self.peek() == "NULL" and t.kind is not Kind.NULL:
            self.take()
        if self.i < len(self.tokens) and self.tokens[self.i][0] == "marker":
            marker = self.take()[1].strip("*")
            t = t.with_time_attribute(TimeAttribute(marker))
        return t

    def _base(self, word: str) -> DataType:
        if word in _ALIASES:
            if word in ("FLOAT",) and self.peek() == "(":
                self.parens(1)
            if word == "DOUBLE":
                self.accept("PRECISION")
            return _simple(_ALIASES[word])
        if word in ("DECIMAL", "DEC", "NUMERIC"):
            args = self.parens(2)
            return decimal(args[0] if args else 10, args[1] if len(args) > 1 else 0)
        if word == "STRING":
            return STRING
        if word == "BYTES":
            return BYTES
        if word in ("VARCHAR", "CHAR", "BINARY", "VARBINARY"):
            if word == "CHAR" and self.accept("VARYING"):
                word = "VARCHAR"
            args = self.parens(1)
            default = 1 if word in ("CHAR", "BINARY") else MAX_LENGTH
            return DataType(Kind(word), length=args[0] if args else default)
        if word == "TIME":
            args = self.parens(1)
            self._skip_time_zone_suffix(allow_local=False)
            return time(args[0] if args else 0)
        if word == "TIMESTAMP":
            args = self.parens(1)
            precision = args[0] if args else 6
            if self._skip_time_zone_suffix(allow_local=True):
                return timestamp_ltz(precision)
            return timestamp(precision)
        if word == "TIMESTAMP_LTZ":
            args = self.parens(1)
            return timestamp_ltz(args[0] if args else 6)
        if word in ("ARRAY", "MULTISET"):
            self.expect("<")
            element = self.parse_type()
            self.expect(">")
            return DataType(Kind(word), element=element)
        if word == "MAP":
            self.expect("<")
            key = self.parse_type()
            self.expect(",")
            value = self.parse_type()
            self.expect(">")
            return map_(key, value)
        if word == "ROW":
            return self._row()
        if word == "INTERVAL":
            return self._interval()
        self.i -= 1
        self.fail(f"unknown type {word!r}")
        raise AssertionError  # unreachable

    def _skip_time_zone_suffix(self, allow_local: bool) -> bool:
        """`WITHOUT TIME ZONE` (ignored) or `WITH LOCAL TIME ZONE` (returns True)."""
        if self.accept("WITHOUT"):
            self.expect("TIME")
            self.expect("ZONE")
            return False
        if self.peek() == "WITH" and allow_local:
            self.take()
            self.expect("LOCAL")
            self.expect("TIME")
            self.expect("ZONE")
            return True
        return False

    def _row(self) -> DataType:
        if self.accept("<"):
            close = ">"
        else:
            self.expect("(")
            close = ")"
        fields: list[RowField] = []
        if not self.accept(close):
            while True:
                kind, value, _ = self.take()
                if kind == "quoted":
                    name = value[1:-1].replace("``", "`")
                elif kind == "word":
                    name = value
                else:
                    self.i -= 1
                    self.fail("expected a field name")
                self.accept(":")
                ftype = self.parse_type()
                description = None
                if self.i < len(self.tokens) and self.tokens[self.i][0] == "string":
                    description = self.take()[1][1:-1].replace("''", "'")
                fields.append(RowField(name, ftype, description))
                if self.accept(close):
                    break
                self.expect(",")
        return DataType(Kind.ROW, fields=tuple(fields))

    def _interval(self) -> DataType:
        first = self.take()[1].upper()
        self.parens(1)
        if first in ("YEAR", "MONTH"):
            if self.accept("TO"):
                self.take()
            return INTERVAL_YEAR_MONTH
        if self.accept("TO"):
            self.take()
            self.parens(1)
        return INTERVAL_DAY_TIME


def parse_type(text: str) -> DataType:
    """Parse a type string (Flink syntax or this module's canonical form)."""
    return _TypeParser(text).parse()


# --- type relations used by inference ---------------------------------------------------------------
_NUMERIC_RANK = {Kind.TINYINT: 1, Kind.SMALLINT: 2, Kind.INT: 3, Kind.BIGINT: 4, Kind.DECIMAL: 5, Kind.FLOAT: 6,
                 Kind.DOUBLE: 7}
_INTEGRAL_PRECISION = {Kind.TINYINT: 3, Kind.SMALLINT: 5, Kind.INT: 10, Kind.BIGINT: 19}


def common_type(types: list[DataType]) -> DataType | None:
    """The least restrictive type of ``types`` (for UNION, CASE, COALESCE, IN), or None if none exists.

    Nullability is the OR of the inputs; time attributes are dropped unless all inputs agree.
    """
    concrete = [t for t in types if t.kind is not Kind.NULL]
    nullable = any(t.nullable for t in types)
    if not concrete:
        return NULL
    first = concrete[0]
    if all(t.without_time_attribute().with_nullable(True) == first.without_time_attribute().with_nullable(True)
           for t in concrete):
        result = first.with_nullable(nullable)
        if not all(t.time_attribute == first.time_attribute for t in concrete):
            result = result.without_time_attribute()
        return result
    kinds = {t.kind for t in concrete}
    if all(t.is_numeric for t in concrete):
        if Kind.DECIMAL in kinds and not kinds & {Kind.FLOAT, Kind.DOUBLE}:
            integer_digits = 0
            scale = 0
            for t in concrete:
                if t.kind is Kind.DECIMAL:
                    integer_digits = max(integer_digits, (t.precision or 0) - (t.scale or 0))
                    scale = max(scale, t.scale or 0)
                else:
                    integer_digits = max(integer_digits, _INTEGRAL_PRECISION[t.kind])
            return decimal(min(38, integer_digits + scale), scale).with_nullable(nullable)
        top = max(concrete, key=lambda t: _NUMERIC_RANK[t.kind])
        return _simple(top.kind).with_nullable(nullable)
    if all(t.is_string for t in concrete):
        if kinds == {Kind.CHAR} and len({t.length for t in concrete}) == 1:
            return first.with_nullable(nullable)
        return varchar(max(t.length or MAX_LENGTH for t in concrete)).with_nullable(nullable)
    if all(t.kind in BINARY_STRING for t in concrete):
        return DataType(Kind.VARBINARY, length=max(t.length or MAX_LENGTH for t in concrete)).with_nullable(nullable)
    if all(t.is_timestamp for t in concrete) and len(kinds) == 1:
        return DataType(first.kind, precision=max(t.precision or 0 for t in concrete)).with_nullable(nullable)
    if all(t.kind in (Kind.ARRAY, Kind.MULTISET) for t in concrete) and len(kinds) == 1:
        element = common_type([t.element for t in concrete if t.element is not None])
        return None if element is None else DataType(first.kind, element=element, nullable=nullable)
    return None
