"""Built-in functions keyed by ``(name, version)``.

Plans reference built-ins as ``{"name": "UPPER", "version": 1}``. Compilation always picks the newest
version; restore looks up exactly the recorded one, so an old plan keeps old semantics after a behaviour
change (the old version stays registered, reachable by its internal name such as ``$TO_TIMESTAMP_LTZ$1``).
Each function knows how to infer its result type and how to render itself for Spark (as a sqlglot
expression in Spark's dialect); aggregate and window functions are rendered by the runtime's operators,
so their ``render_spark`` is None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlglot import exp

from planengine.errors import ValidationError
from planengine.ir.types import DataType


class FunctionKind(StrEnum):
    SCALAR = "SCALAR"
    AGGREGATE = "AGGREGATE"
    WINDOW = "WINDOW"  # ROW_NUMBER, RANK, DENSE_RANK, LAG, LEAD: only inside OVER
    TABLE = "TABLE"  # UNNEST and table functions


@dataclass(frozen=True)
class CallContext:
    """What type inference sees: operand types and, where an operand is a literal, its value."""

    name: str
    operand_types: tuple[DataType, ...]
    literals: tuple[Any, ...] = ()  # per operand: the literal value, or NO_LITERAL
    # The type the call site asks for, when the syntax names one: CAST/TRY_CAST targets,
    # REINTERPRET, JSON_VALUE ... RETURNING. Re-inference from a plan passes the recorded call type.
    target_type: DataType | None = None

    def fail(self, message: str) -> ValidationError:
        signature = ", ".join(str(t) for t in self.operand_types)
        return ValidationError(f"{self.name}({signature}): {message}")

    def literal(self, i: int) -> Any:
        return self.literals[i] if i < len(self.literals) else NO_LITERAL


NO_LITERAL = object()


@dataclass(frozen=True)
class RenderContext:
    """What Spark rendering sees: operands already rendered to Spark-dialect sqlglot expressions."""

    operands: tuple[exp.Expression, ...]
    operand_types: tuple[DataType, ...]
    result_type: DataType
    literals: tuple[Any, ...] = ()

    def literal(self, i: int) -> Any:
        return self.literals[i] if i < len(self.literals) else NO_LITERAL


TypeInference = Callable[[CallContext], DataType]
SparkRenderer = Callable[[RenderContext], exp.Expression]


@dataclass(frozen=True)
class BuiltinFunction:
    name: str  # SQL name in upper case ("UPPER", "+", "IS NULL", "CAST", "COUNT")
    version: int
    kind: FunctionKind
    infer_type: TypeInference
    render_spark: SparkRenderer | None = None
    deterministic: bool = True
    internal_name: str | None = None  # set when a newer version supersedes this one
    description: str = ""
    # Aggregates: whether the runtime can retract (MIN/MAX need state of all values to retract).
    supports_retraction: bool = True

    @property
    def key(self) -> tuple[str, int]:
        return (self.name, self.version)


@dataclass
class FunctionRegistry:
    _by_key: dict[tuple[str, int], BuiltinFunction] = field(default_factory=dict)
    _by_internal_name: dict[str, BuiltinFunction] = field(default_factory=dict)
    # Newest version per SQL name: ``resolve`` runs once per call in a query (5000 times for a 5000-term sum).
    _newest: dict[str, BuiltinFunction] = field(default_factory=dict)

    def register(self, fn: BuiltinFunction) -> BuiltinFunction:
        if fn.key in self._by_key:
            raise ValueError(f"function {fn.name} version {fn.version} registered twice")
        self._by_key[fn.key] = fn
        newest = self._newest.get(fn.name)
        if newest is None or fn.version > newest.version:
            self._newest[fn.name] = fn
        if fn.internal_name:
            self._by_internal_name[fn.internal_name] = fn
        return fn

    def resolve(self, name: str) -> BuiltinFunction | None:
        """Newest version of a built-in by SQL name (case-insensitive), or None."""
        upper = name.upper()
        if upper in self._by_internal_name:
            return self._by_internal_name[upper]
        return self._newest.get(upper)

    def get(self, name: str, version: int) -> BuiltinFunction:
        """Exactly ``(name, version)``; restore uses this, never ``resolve``."""
        try:
            return self._by_key[(name, version)]
        except KeyError:
            known = sorted(v for (n, v) in self._by_key if n == name)
            hint = f"this engine has versions {known}" if known else "this engine has no function of that name"
            raise ValidationError(f"built-in function {name} version {version} is not registered", hint=hint) from None

    def all(self) -> list[BuiltinFunction]:
        return [self._by_key[k] for k in sorted(self._by_key)]

    def nondeterministic_names(self) -> frozenset[str]:
        return frozenset(fn.name for fn in self._by_key.values() if not fn.deterministic)
