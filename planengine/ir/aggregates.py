"""Aggregate calls: one aggregate function applied to input fields, as logical plans and exec nodes hold it.

A call names a built-in by ``(function, version)`` or a user (Python) aggregate by its ``FunctionRef``;
its arguments are input field indices, so the same value serves the planner, the plan JSON and the runtime.

>>> from planengine.ir import types as T
>>> call = AggregateCall("SUM", 1, (2,), T.BIGINT, "total", filter_arg=3)
>>> str(call), AggregateCall.from_json(call.to_json()) == call
('SUM($2) FILTER $3', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planengine.ir.expressions import SELF_CONTAINED, Expr, ExprJson, FunctionRef, Literal
from planengine.ir.types import DataType, parse_type


@dataclass(frozen=True)
class AggregateCall:
    function: str  # built-in name (COUNT, SUM, …) or a user function identifier
    version: int | None
    args: tuple[int, ...]  # input field indices
    type: DataType
    name: str
    distinct: bool = False
    filter_arg: int | None = None  # index of a BOOLEAN input field (FILTER (WHERE …))
    approximate: bool = False
    # Extra literal arguments, e.g. LISTAGG's separator
    constants: tuple[Literal, ...] = ()
    # A user-defined (Python) aggregate: its identifier and class, instead of a built-in name + version.
    user_function: FunctionRef | None = None

    def __str__(self) -> str:
        inner = ("DISTINCT " if self.distinct else "") + ", ".join(f"${a}" for a in self.args)
        text = f"{self.function}({inner or ('*' if self.function == 'COUNT' else '')})"
        if self.filter_arg is not None:
            text += f" FILTER ${self.filter_arg}"
        return text

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        out["function"] = self.user_function.to_json(ctx) if self.user_function is not None else self.function
        if self.version is not None:
            out["version"] = self.version
        out["argList"] = list(self.args)
        if self.filter_arg is not None:
            out["filterArg"] = self.filter_arg
        out["distinct"] = self.distinct
        if self.constants:
            out["constants"] = [c.to_json(ctx) for c in self.constants]
        out["type"] = str(self.type)
        return out

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> AggregateCall:
        constants = tuple(Expr.from_json(c, ctx) for c in data.get("constants", []))
        user = FunctionRef.from_json(data["function"]) if isinstance(data["function"], dict) else None
        return AggregateCall(
            user_function=user,
            function=user.name if user is not None else data["function"],
            version=data.get("version"),
            args=tuple(data["argList"]),
            type=parse_type(data["type"]),
            name=data["name"],
            distinct=data.get("distinct", False),
            filter_arg=data.get("filterArg"),
            constants=constants,  # type: ignore[arg-type]
        )
