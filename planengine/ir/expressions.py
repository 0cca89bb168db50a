"""Resolved, typed row expressions: what plans store and translators render.

Four shapes cover everything (DESIGN §3): ``InputRef`` (a field of the input row, by index), ``Literal``
(value + type), ``Call`` (a function by name + version, or a catalog function by identifier) and
``FieldAccess`` / ``CorrelatedRef`` for nested rows and UNNEST. They are frozen so rules can share and
compare them, and their JSON form is declarative: no class names, only data.

>>> from planengine.ir import types as T
>>> e = Call(FunctionRef("+", 1), (InputRef(0, T.INT), Literal(1, T.INT.with_nullable(False))), T.INT)
>>> Expr.from_json(e.to_json()) == e
True
>>> str(e)
'+($0, 1)'
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from planengine.ir.types import DataType, Kind, parse_type


@dataclass(frozen=True)
class ExprJson:
    """How expressions are written into / read from one plan node: passed explicitly by the plan serializer.

    ``input_row`` holds the field types of the node's input row(s) (left ++ right for two inputs): an
    INPUT_REF whose type equals its input field's type is written without a type and read back from here.
    ``function_classes`` says whether user-function classes are written (the ``ALL`` compile strategy).
    The default (no input row, classes written) is the self-contained form used outside plans.
    """

    input_row: tuple[DataType, ...] = ()
    function_classes: bool = True

    def implied_type(self, index: int) -> DataType | None:
        return self.input_row[index] if 0 <= index < len(self.input_row) else None


SELF_CONTAINED = ExprJson()


@dataclass(frozen=True)
class FunctionRef:
    """A built-in by ``(name, version)``, or a catalog/system function by identifier (``version`` None)."""

    name: str
    version: int | None = 1
    catalog_identifier: str | None = None  # e.g. "`default_catalog`.`default_database`.`my_fn`"
    system: bool = False  # temporary system function referenced by plain name
    # User functions: the Python object path, written into plans only under the ALL strategy for permanent
    # catalog functions (temporary functions are persisted by identifier only).
    class_name: str | None = None
    temporary: bool = False

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        if self.catalog_identifier is not None:
            out: dict[str, Any] = {"identifier": self.catalog_identifier}
        elif self.system:
            out = {"systemName": self.name}
        else:
            return {"name": self.name, "version": self.version}
        if self.temporary:
            out["temporary"] = True
        elif self.class_name is not None and ctx.function_classes:
            out["class"] = self.class_name
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> FunctionRef:
        if "identifier" in data:
            return FunctionRef(data["identifier"].rsplit(".", 1)[-1].strip("`"), None,
                               catalog_identifier=data["identifier"], class_name=data.get("class"),
                               temporary=bool(data.get("temporary", False)))
        if "systemName" in data:
            return FunctionRef(data["systemName"], None, system=True, class_name=data.get("class"),
                               temporary=bool(data.get("temporary", True)))
        return FunctionRef(data["name"], data["version"])

    @property
    def is_builtin(self) -> bool:
        return self.catalog_identifier is None and not self.system


class Expr:
    """Base class. Subclasses are frozen dataclasses with a ``type`` field."""

    KIND: ClassVar[str]
    type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> Expr:
        kind = data["kind"]
        if kind == "INPUT_REF":
            if "type" in data:
                return InputRef(data["inputIndex"], parse_type(data["type"]))
            implied = ctx.implied_type(data["inputIndex"])
            if implied is None:
                raise ValueError(f"INPUT_REF {data['inputIndex']} has no type and no input field to imply it")
            return InputRef(data["inputIndex"], implied)
        if kind == "LITERAL":
            t = parse_type(data["type"])
            return Literal(_literal_from_json(data.get("value"), t), t)
        if kind == "CALL":
            return Call(
                FunctionRef.from_json(data["function"]),
                tuple(Expr.from_json(o, ctx) for o in data.get("operands", [])),
                parse_type(data["type"]),
            )
        if kind == "FIELD_ACCESS":
            return FieldAccess(Expr.from_json(data["expr"], ctx), data["name"], parse_type(data["type"]))
        if kind == "CORRELATED_REF":
            return CorrelatedRef(data["correlation"], parse_type(data["type"]))
        raise ValueError(f"unknown expression kind {kind!r}")

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True)
class InputRef(Expr):
    KIND = "INPUT_REF"
    index: int
    type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        if ctx.implied_type(self.index) == self.type:
            return {"kind": self.KIND, "inputIndex": self.index}
        return {"kind": self.KIND, "inputIndex": self.index, "type": str(self.type)}

    def __str__(self) -> str:
        return f"${self.index}"


@dataclass(frozen=True)
class Literal(Expr):
    KIND = "LITERAL"
    value: Any  # None, bool, int, float, str, bytes, Decimal, date/time/datetime, timedelta (intervals)
    type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.KIND}
        if self.value is not None:
            out["value"] = _literal_to_json(self.value, self.type)
        out["type"] = str(self.type)
        return out

    def __str__(self) -> str:
        if self.value is None:
            return "null"
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        if isinstance(self.value, dt.timedelta):
            return f"{int(self.value / dt.timedelta(milliseconds=1))}:INTERVAL"
        return str(_literal_to_json(self.value, self.type))


@dataclass(frozen=True)
class Call(Expr):
    KIND = "CALL"
    function: FunctionRef
    operands: tuple[Expr, ...]
    type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {
            "kind": self.KIND,
            "function": self.function.to_json(ctx),
            "operands": [o.to_json(ctx) for o in self.operands],
            "type": str(self.type),
        }

    def children(self) -> tuple[Expr, ...]:
        return self.operands

    @property
    def name(self) -> str:
        return self.function.name

    def __str__(self) -> str:
        return f"{self.function.name}({', '.join(str(o) for o in self.operands)})"


@dataclass(frozen=True)
class FieldAccess(Expr):
    KIND = "FIELD_ACCESS"
    expr: Expr
    name: str
    type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"kind": self.KIND, "expr": self.expr.to_json(ctx), "name": self.name, "type": str(self.type)}

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def __str__(self) -> str:
        return f"{self.expr}.{self.name}"


@dataclass(frozen=True)
class CorrelatedRef(Expr):
    """The current row of the outer input inside a correlated table function (UNNEST)."""

    KIND = "CORRELATED_REF"
    correlation: int
    type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"kind": self.KIND, "correlation": self.correlation, "type": str(self.type)}

    def __str__(self) -> str:
        return f"$cor{self.correlation}"


# --- literal values in JSON ------------------------------------------------------------------------
def _literal_to_json(value: Any, t: DataType) -> Any:
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.timedelta):
        return int(value / dt.timedelta(milliseconds=1)) if t.kind is Kind.INTERVAL_DAY_TIME else value.days
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_literal_to_json(v, t.element or t) for v in value]
    raise TypeError(f"cannot serialise literal {value!r} of type {t}")


def _literal_from_json(value: Any, t: DataType) -> Any:
    if value is None:
        return None
    k = t.kind
    if k is Kind.DECIMAL:
        return decimal.Decimal(value)
    if k is Kind.INTERVAL_DAY_TIME:
        return dt.timedelta(milliseconds=value)
    if k is Kind.INTERVAL_YEAR_MONTH:
        return int(value)  # months
    if k is Kind.DATE:
        return dt.date.fromisoformat(value)
    if k is Kind.TIME:
        return dt.time.fromisoformat(value)
    if k in (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ):
        return dt.datetime.fromisoformat(value)
    if k in (Kind.BINARY, Kind.VARBINARY):
        return bytes.fromhex(value)
    if k in (Kind.FLOAT, Kind.DOUBLE):
        return float(value)
    if k in (Kind.ARRAY, Kind.MULTISET) and t.element is not None:
        return tuple(_literal_from_json(v, t.element) for v in value)
    return value


# --- helpers used by rules ----------------------------------------------------------------------------
def input_refs(expr: Expr) -> set[int]:
    """Indices of the input fields an expression reads."""
    found: set[int] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, InputRef):
            found.add(e.index)
        stack.extend(e.children())
    return found


def map_input_refs(expr: Expr, fn: Callable[[InputRef], Expr]) -> Expr:
    """Rebuild ``expr`` with every ``InputRef`` replaced by ``fn(ref)`` (the one walk rules need)."""
    if isinstance(expr, InputRef):
        return fn(expr)
    if isinstance(expr, Call):
        return Call(expr.function, tuple(map_input_refs(o, fn) for o in expr.operands), expr.type)
    if isinstance(expr, FieldAccess):
        return FieldAccess(map_input_refs(expr.expr, fn), expr.name, expr.type)
    return expr


def remap_inputs(expr: Expr, mapping: dict[int, int]) -> Expr:
    """Rewrite input indices (used when a projection below changes the field order)."""
    return map_input_refs(expr, lambda ref: InputRef(mapping[ref.index], ref.type))


def substitute(expr: Expr, replacements: list[Expr]) -> Expr:
    """Replace each ``InputRef(i)`` by ``replacements[i]`` (inlining a projection into its consumer)."""
    return map_input_refs(expr, lambda ref: replacements[ref.index])


def is_deterministic(expr: Expr, nondeterministic: frozenset[str]) -> bool:
    if isinstance(expr, Call) and expr.function.name in nondeterministic:
        return False
    return all(is_deterministic(c, nondeterministic) for c in expr.children())


def conjunctions(expr: Expr | None) -> list[Expr]:
    """Split a predicate on AND."""
    if expr is None:
        return []
    if isinstance(expr, Call) and expr.function.name == "AND":
        out: list[Expr] = []
        for o in expr.operands:
            out.extend(conjunctions(o))
        return out
    return [expr]
