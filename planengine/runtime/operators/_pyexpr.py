"""Plan expressions evaluated in Python, for conditions a processor checks per row pair (join non-equi
conditions). SQL three-valued logic: NULL propagates through comparisons and arithmetic, AND/OR follow
Kleene logic; a condition holds only when it is TRUE. Functions outside this subset fail at translation
time with the function's name, so a plan never starts with a condition it cannot evaluate.

>>> from planengine.ir import types as T
>>> from planengine.ir.expressions import Call, FunctionRef, InputRef, Literal
>>> gt = Call(FunctionRef(">", 1), (InputRef(0, T.BIGINT), InputRef(1, T.BIGINT)), T.BOOLEAN)
>>> f = compile_condition(gt)
>>> f((3, 2)), f((1, 2)), f((None, 2))
(True, False, False)
"""

from __future__ import annotations

import decimal
import operator
from collections.abc import Callable
from typing import Any

from planengine.errors import ValidationError
from planengine.ir.expressions import Call, Expr, FieldAccess, InputRef, Literal
from planengine.ir.types import Kind

Fn = Callable[[tuple[Any, ...]], Any]

_COMPARE = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}


def _div(a: Any, b: Any, kind: Kind) -> Any:
    if kind in (Kind.TINYINT, Kind.SMALLINT, Kind.INT, Kind.BIGINT):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if isinstance(a, decimal.Decimal) or isinstance(b, decimal.Decimal):
        return decimal.Decimal(a) / decimal.Decimal(b)
    return a / b


def _mod(a: Any, b: Any) -> Any:
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def compile_expr(e: Expr) -> Fn:
    if isinstance(e, InputRef):
        i = e.index
        return lambda row: row[i]
    if isinstance(e, Literal):
        v = e.value
        return lambda row: v
    if isinstance(e, FieldAccess):
        inner = compile_expr(e.expr)
        t = e.expr.type
        names = t.field_names() if t.kind is Kind.ROW else []
        idx = names.index(e.name) if e.name in names else None

        def access(row: tuple[Any, ...]) -> Any:
            v = inner(row)
            if v is None:
                return None
            if isinstance(v, dict):
                return v.get(e.name)
            return v[idx] if idx is not None else None

        return access
    if not isinstance(e, Call):
        raise ValidationError(f"cannot evaluate {e} in a join condition")
    name = e.function.name.upper()
    ops = [compile_expr(o) for o in e.operands]
    if name in _COMPARE:
        cmp, a, b = _COMPARE[name], ops[0], ops[1]

        def compare(row: tuple[Any, ...]) -> Any:
            x, y = a(row), b(row)
            return None if x is None or y is None else cmp(x, y)

        return compare
    if name == "AND":
        def and_(row: tuple[Any, ...]) -> Any:
            unknown = False
            for o in ops:
                v = o(row)
                if v is False:
                    return False
                unknown = unknown or v is None
            return None if unknown else True

        return and_
    if name == "OR":
        def or_(row: tuple[Any, ...]) -> Any:
            unknown = False
            for o in ops:
                v = o(row)
                if v is True:
                    return True
                unknown = unknown or v is None
            return None if unknown else False

        return or_
    if name == "NOT":
        return lambda row: None if (v := ops[0](row)) is None else not v
    if name == "IS NULL":
        return lambda row: ops[0](row) is None
    if name == "IS NOT NULL":
        return lambda row: ops[0](row) is not None
    if name in ("IS TRUE", "IS NOT TRUE", "IS FALSE", "IS NOT FALSE"):
        want = "TRUE" in name
        neg = "NOT" in name
        return lambda row: (ops[0](row) is want) != neg
    if name in ("IS DISTINCT FROM", "IS NOT DISTINCT FROM"):
        neg = name.startswith("IS NOT")
        return lambda row: (ops[0](row) == ops[1](row)) == neg
    if name in ("+", "-", "*", "/", "%", "MOD"):
        kind = e.type.kind
        fn: Callable[[Any, Any], Any] = {
            "+": operator.add, "-": operator.sub, "*": operator.mul, "%": _mod, "MOD": _mod,
            "/": lambda x, y: _div(x, y, kind)}[name]
        a, b = ops

        def arith(row: tuple[Any, ...]) -> Any:
            x, y = a(row), b(row)
            return None if x is None or y is None else fn(x, y)

        return arith
    if name == "NEGATE":
        return lambda row: None if (v := ops[0](row)) is None else -v
    if name in ("CAST", "TRY_CAST", "REINTERPRET"):
        from planengine.runtime.operators.state_codec import coerce  # noqa: PLC0415 — state_codec loads pandas/pyarrow/numpy; only a running operator needs them

        t = e.type
        if t.kind in (Kind.CHAR, Kind.VARCHAR):
            return lambda row: None if (v := ops[0](row)) is None else str(v)
        return lambda row: coerce(ops[0](row), t)
    if name in ("IN", "NOT IN"):
        neg = name == "NOT IN"

        def in_(row: tuple[Any, ...]) -> Any:
            v = ops[0](row)
            if v is None:
                return None
            items = [o(row) for o in ops[1:]]
            if v in items:
                return not neg
            return None if None in items else neg

        return in_
    if name in ("BETWEEN", "NOT BETWEEN"):
        neg = name == "NOT BETWEEN"

        def between(row: tuple[Any, ...]) -> Any:
            v, lo, hi = (o(row) for o in ops)
            if v is None or lo is None or hi is None:
                return None
            return (lo <= v <= hi) != neg

        return between
    if name == "COALESCE":
        return lambda row: next((v for o in ops if (v := o(row)) is not None), None)
    if name in ("IF", "CASE"):
        def case(row: tuple[Any, ...]) -> Any:
            for i in range(0, len(ops) - 1, 2):
                if ops[i](row) is True:
                    return ops[i + 1](row)
            return ops[-1](row) if len(ops) % 2 else None

        return case
    if name in ("UPPER", "LOWER"):
        f = str.upper if name == "UPPER" else str.lower
        return lambda row: None if (v := ops[0](row)) is None else f(v)
    raise ValidationError(f"function {e.function.name} is not supported in a regular join's non-equi condition",
                          hint="compute it in a projection before the join")


def compile_condition(e: Expr | None) -> Callable[[tuple[Any, ...]], bool]:
    """A predicate that is true only when the condition evaluates to TRUE (None = always true)."""
    if e is None:
        return lambda row: True
    fn = compile_expr(e)
    return lambda row: fn(row) is True
