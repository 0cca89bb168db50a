"""Small shared pieces for the built-in modules: operand checks, nullability and Spark node builders.

Type inference follows Flink's rules, and most of them are "the result is NOT NULL only when every
operand is", so that rule and the operand family checks live here once instead of in every function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlglot import exp

from planengine.functions.registry import (
    NO_LITERAL,
    BuiltinFunction,
    CallContext,
    FunctionKind,
    FunctionRegistry,
    RenderContext,
    SparkRenderer,
    TypeInference,
)
from planengine.functions.spark_types import spark_data_type
from planengine.ir.types import (
    BINARY_STRING,
    CHARACTER,
    INTEGRAL,
    NUMERIC,
    DataType,
    Kind,
)

# --- operand families --------------------------------------------------------------------------------
FAMILIES: dict[str, Callable[[DataType], bool]] = {
    "ANY": lambda t: True,
    "NUMERIC": lambda t: t.kind in NUMERIC,
    "INTEGER": lambda t: t.kind in INTEGRAL,
    "STRING": lambda t: t.kind in CHARACTER,
    "BINARY": lambda t: t.kind in BINARY_STRING,
    "BOOLEAN": lambda t: t.kind is Kind.BOOLEAN,
    "DATE": lambda t: t.kind is Kind.DATE,
    "TIMESTAMP": lambda t: t.kind in (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ),
    "DATETIME": lambda t: t.kind in (Kind.DATE, Kind.TIME, Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ),
    "INTERVAL": lambda t: t.kind in (Kind.INTERVAL_DAY_TIME, Kind.INTERVAL_YEAR_MONTH),
    "ARRAY": lambda t: t.kind is Kind.ARRAY,
    "MAP": lambda t: t.kind is Kind.MAP,
    "COLLECTION": lambda t: t.kind in (Kind.ARRAY, Kind.MAP, Kind.MULTISET),
}


def any_nullable(types: Iterable[DataType]) -> bool:
    return any(t.nullable or t.kind is Kind.NULL for t in types)


def nullable_if_args(t: DataType, ctx: CallContext) -> DataType:
    """Flink's ``nullableIfArgs``: NOT NULL only when every operand is NOT NULL."""
    return t.with_nullable(any_nullable(ctx.operand_types))


def check_arity(ctx: CallContext, low: int, high: int | None = -1) -> None:
    """``high=-1`` means exactly ``low``; ``high=None`` means no upper bound."""
    n = len(ctx.operand_types)
    top = low if high == -1 else high
    if n < low or (top is not None and n > top):
        if top == low:
            expected = f"{low}"
        elif top is None:
            expected = f"at least {low}"
        else:
            expected = f"{low} to {top}"
        raise ctx.fail(f"expects {expected} argument(s) but got {n}")


def expect(ctx: CallContext, index: int, *families: str) -> DataType:
    """The operand's type, after checking it is in one of ``families`` (a NULL literal fits any)."""
    t = ctx.operand_types[index]
    if t.kind is Kind.NULL or any(FAMILIES[f](t) for f in families):
        return t
    wanted = " or ".join(f.lower() for f in families)
    raise ctx.fail(f"argument {index + 1} must be {wanted}, not {t}")


def signature(*families: str, optional: int = 0, variadic: str | None = None) -> Callable[[CallContext], None]:
    """A checker for ``families`` positionally; the last ``optional`` may be omitted; extra operands
    must match ``variadic``."""

    def check(ctx: CallContext) -> None:
        n = len(ctx.operand_types)
        check_arity(ctx, len(families) - optional, None if variadic else len(families))
        for i in range(n):
            expect(ctx, i, families[i] if i < len(families) else variadic or "ANY")

    return check


def fixed(result: DataType, *families: str, optional: int = 0, variadic: str | None = None,
          always_nullable: bool = False) -> TypeInference:
    """Inference for functions with a fixed result type and Flink's usual nullability."""
    check = signature(*families, optional=optional, variadic=variadic)

    def infer(ctx: CallContext) -> DataType:
        check(ctx)
        return result.with_nullable(True) if always_nullable else nullable_if_args(result, ctx)

    return infer


def literal_str(ctx: CallContext | RenderContext, index: int) -> str | None:
    """A flag operand (units, trim flags, type names) is a string literal; return it upper-cased."""
    value = ctx.literal(index)
    return value.upper() if isinstance(value, str) else None


def is_literal(ctx: CallContext | RenderContext, index: int) -> bool:
    return ctx.literal(index) is not NO_LITERAL


# --- registration --------------------------------------------------------------------------------------
def scalar(registry: FunctionRegistry, name: str, infer: TypeInference, render: SparkRenderer, *,
           deterministic: bool = True, description: str = "", version: int = 1,
           internal_name: str | None = None) -> BuiltinFunction:
    return registry.register(BuiltinFunction(
        name=name, version=version, kind=FunctionKind.SCALAR, infer_type=infer, render_spark=render,
        deterministic=deterministic, description=description, internal_name=internal_name))


# --- Spark node builders ---------------------------------------------------------------------------------
_ATOMIC = (exp.Column, exp.Literal, exp.Func, exp.Paren, exp.Cast, exp.Null, exp.Boolean, exp.Identifier,
           exp.Dot, exp.Var, exp.Interval, exp.Bracket)


def paren(e: exp.Expression) -> exp.Expression:
    """sqlglot does not add parentheses from tree shape, so any compound operand gets them."""
    return e if isinstance(e, _ATOMIC) and not isinstance(e, exp.Binary) else exp.Paren(this=e)


def fn(name: str, *args: exp.Expression) -> exp.Expression:
    """A Spark function call by name, without relying on sqlglot's function transpilation."""
    return exp.Anonymous(this=name, expressions=list(args))


def cast(e: exp.Expression, t: DataType) -> exp.Expression:
    return exp.Cast(this=e, to=spark_data_type(t))


def string(value: str) -> exp.Expression:
    return exp.Literal.string(value)


def number(value: int | float | str) -> exp.Expression:
    return exp.Literal.number(value)


def null() -> exp.Expression:
    return exp.Null()


def binary(cls: type[exp.Expression], left: exp.Expression, right: exp.Expression) -> exp.Expression:
    return cls(this=paren(left), expression=paren(right))


def case(*branches: tuple[exp.Expression, exp.Expression], default: exp.Expression | None = None) -> exp.Expression:
    node = exp.Case()
    for cond, value in branches:
        node = node.when(cond, value)
    return node.else_(default) if default is not None else node


def is_null(e: exp.Expression) -> exp.Expression:
    return exp.Is(this=paren(e), expression=exp.Null())


def null_if_any_null(operands: Iterable[exp.Expression], value: exp.Expression) -> exp.Expression:
    """``CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE value END`` for Spark functions that skip NULLs
    where Flink's return NULL."""
    checks = [is_null(o) for o in operands if not isinstance(o, exp.Literal)]
    if not checks:
        return value
    condition = checks[0]
    for c in checks[1:]:
        condition = exp.Or(this=condition, expression=c)
    return case((condition, null()), default=value)


def call(name: str) -> SparkRenderer:
    """Render as the Spark function ``name`` with the operands unchanged."""
    return lambda ctx: fn(name, *ctx.operands)


__all__ = [
    "NO_LITERAL",
    "BuiltinFunction",
    "CallContext",
    "FunctionKind",
    "FunctionRegistry",
    "RenderContext",
]
