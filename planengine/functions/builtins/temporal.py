"""Date and time built-ins, including the versioned ``TO_TIMESTAMP_LTZ``.

Flink TIMESTAMP is Spark TIMESTAMP_NTZ and Flink TIMESTAMP_LTZ is Spark TIMESTAMP, so results are cast
to the planned type wherever Spark's function answers the other one (``date_trunc``, ``timestampadd``
on a DATE). Parsing functions (``TO_DATE``, ``TO_TIMESTAMP``, ``UNIX_TIMESTAMP(s)``) return NULL on bad
input in Flink, so they render through Spark's ``try_`` variants (ANSI Spark would fail the query).
Field extraction answers BIGINT in Flink and INT/DECIMAL in Spark; results are cast.

``TO_TIMESTAMP_LTZ`` exists in two versions to show how a behaviour change stays restorable: version 1
(internal name ``$TO_TIMESTAMP_LTZ$1``) reads a numeric epoch as seconds whatever the precision
argument says; version 2 honours the precision (0 = seconds, 3 = milliseconds, the default).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planengine.functions.builtins._support import (
    CallContext,
    FunctionRegistry,
    RenderContext,
    cast,
    check_arity,
    expect,
    fixed,
    fn,
    literal_str,
    nullable_if_args,
    number,
    paren,
    scalar,
    string,
)
from planengine.ir.types import (
    BIGINT,
    DATE,
    INT,
    STRING,
    DataType,
    Kind,
    TimeAttribute,
    time,
    timestamp,
    timestamp_ltz,
)

DEFAULT_TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss"
DEFAULT_DATE_FORMAT = "yyyy-MM-dd"
EXTRACT_UNITS = ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DOY", "DOW", "HOUR", "MINUTE", "SECOND",
                 "MILLISECOND", "MICROSECOND")
ADD_UNITS = ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR")
_DATE_UNITS = ("DAY", "WEEK", "MONTH", "QUARTER", "YEAR")


def normalize_unit(unit: str) -> str:
    unit = unit.upper().removeprefix("SQL_TSI_")
    return {"DAYOFYEAR": "DOY", "DAYOFWEEK": "DOW", "FRAC_SECOND": "MICROSECOND"}.get(unit, unit)


def _unit(ctx: CallContext, index: int, allowed: tuple[str, ...]) -> str:
    unit = literal_str(ctx, index)
    if unit is None or normalize_unit(unit) not in allowed:
        raise ctx.fail(f"time unit must be one of {', '.join(allowed)}")
    return normalize_unit(unit)


# --- parsing and formatting ----------------------------------------------------------------------------
def _format_or_default(ctx: RenderContext, index: int, default: str) -> exp.Expression:
    return ctx.operands[index] if len(ctx.operands) > index else string(default)


def _parse_timestamp(ctx: RenderContext) -> exp.Expression:
    return fn("try_to_timestamp", ctx.operands[0], _format_or_default(ctx, 1, DEFAULT_TIMESTAMP_FORMAT))


def _infer_date_format(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    expect(ctx, 0, "TIMESTAMP", "DATE", "STRING")
    expect(ctx, 1, "STRING")
    return nullable_if_args(STRING, ctx)


def _render_to_timestamp_ltz(version: int) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        source = ctx.operand_types[0]
        if source.kind in (Kind.CHAR, Kind.VARCHAR):
            return _parse_timestamp(ctx)
        precision = ctx.literal(1) if len(ctx.operands) > 1 else 3
        if version == 1 or precision == 0:
            return fn("timestamp_seconds", ctx.operands[0])
        return fn("timestamp_millis", cast(ctx.operands[0], BIGINT))

    return render


def _infer_to_timestamp_ltz(version: int) -> Callable[[CallContext], DataType]:
    def infer(ctx: CallContext) -> DataType:
        check_arity(ctx, 1 if version > 1 else 2, 2)
        source = expect(ctx, 0, "NUMERIC", "STRING")
        if len(ctx.operand_types) == 2:
            if source.kind in (Kind.CHAR, Kind.VARCHAR):
                expect(ctx, 1, "STRING")
                return timestamp_ltz(3).with_nullable(True)
            expect(ctx, 1, "INTEGER")
            if ctx.literal(1) not in (0, 3):
                raise ctx.fail("precision must be the literal 0 (seconds) or 3 (milliseconds)")
        if source.kind in (Kind.CHAR, Kind.VARCHAR):
            return timestamp_ltz(3).with_nullable(True)
        return nullable_if_args(timestamp_ltz(3), ctx)

    return infer


def _infer_unix_timestamp(ctx: CallContext) -> DataType:
    check_arity(ctx, 0, 2)
    for i in range(len(ctx.operand_types)):
        expect(ctx, i, "STRING")
    return BIGINT.with_nullable(bool(ctx.operand_types))


def _render_unix_timestamp(ctx: RenderContext) -> exp.Expression:
    if not ctx.operands:
        return fn("unix_timestamp")
    return fn("unix_timestamp", _parse_timestamp(ctx))


# --- current time ----------------------------------------------------------------------------------------
def _now_per_row() -> exp.Expression:
    """Wall-clock time per row (Spark's current_timestamp() is fixed per query/micro-batch)."""
    return fn("timestamp_millis", cast(fn("reflect", string("java.lang.System"), string("currentTimeMillis")), BIGINT))


def _infer_current_watermark(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    t = expect(ctx, 0, "TIMESTAMP")
    if not t.is_rowtime:
        raise ctx.fail("the argument must be a rowtime attribute (a column with a WATERMARK)")
    return t.without_time_attribute().with_nullable(True)


# --- extraction and arithmetic ---------------------------------------------------------------------------
def _infer_extract(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    _unit(ctx, 0, EXTRACT_UNITS)
    expect(ctx, 1, "DATETIME", "INTERVAL")
    return nullable_if_args(BIGINT, ctx)


def extract_field(unit: str, value: exp.Expression) -> exp.Expression:
    if unit in ("MILLISECOND", "MICROSECOND"):
        seconds = exp.Extract(this=exp.Var(this="SECOND"), expression=value)
        scale = 1000 if unit == "MILLISECOND" else 1000000
        return cast(exp.Mul(this=seconds, expression=number(scale)), BIGINT)
    return cast(exp.Extract(this=exp.Var(this=unit), expression=value), BIGINT)


def _render_extract(ctx: RenderContext) -> exp.Expression:
    return extract_field(normalize_unit(ctx.literal(0)), ctx.operands[1])


def _field(unit: str) -> Callable[[RenderContext], exp.Expression]:
    return lambda ctx: extract_field(unit, ctx.operands[0])


def _infer_timestampadd(ctx: CallContext) -> DataType:
    check_arity(ctx, 3)
    unit = _unit(ctx, 0, ADD_UNITS)
    expect(ctx, 1, "INTEGER")
    t = expect(ctx, 2, "DATETIME")
    if t.kind is Kind.DATE and unit not in _DATE_UNITS:
        result = timestamp(0)
    elif t.kind is Kind.NULL:
        result = timestamp(3)
    else:
        result = t.without_time_attribute()
    return nullable_if_args(result, ctx)


def _render_timestampadd(ctx: RenderContext) -> exp.Expression:
    unit = normalize_unit(ctx.literal(0))
    out = fn("timestampadd", exp.Var(this=unit), ctx.operands[1], ctx.operands[2])
    return out if ctx.result_type.kind is Kind.TIMESTAMP_LTZ else cast(out, ctx.result_type)


def _infer_timestampdiff(ctx: CallContext) -> DataType:
    check_arity(ctx, 3)
    _unit(ctx, 0, ADD_UNITS)
    expect(ctx, 1, "DATETIME")
    expect(ctx, 2, "DATETIME")
    return nullable_if_args(INT, ctx)


def _render_timestampdiff(ctx: RenderContext) -> exp.Expression:
    unit = normalize_unit(ctx.literal(0))
    return cast(fn("timestampdiff", exp.Var(this=unit), ctx.operands[1], ctx.operands[2]), INT)


def register(registry: FunctionRegistry) -> None:
    s = "STRING"
    scalar(registry, "DATE_FORMAT", _infer_date_format,
           lambda ctx: fn("date_format", *ctx.operands), description="Java DateTimeFormatter pattern letters")
    scalar(registry, "TO_DATE", fixed(DATE, s, s, optional=1, always_nullable=True),
           lambda ctx: fn("try_to_date", ctx.operands[0], _format_or_default(ctx, 1, DEFAULT_DATE_FORMAT)),
           description="NULL when the string does not parse")
    scalar(registry, "TO_TIMESTAMP", fixed(timestamp(3), s, s, optional=1, always_nullable=True),
           lambda ctx: cast(_parse_timestamp(ctx), ctx.result_type),
           description="default format 'yyyy-MM-dd HH:mm:ss'; NULL when the string does not parse")
    scalar(registry, "TO_TIMESTAMP_LTZ", _infer_to_timestamp_ltz(1), _render_to_timestamp_ltz(1), version=1,
           internal_name="$TO_TIMESTAMP_LTZ$1", description="numeric epoch always in seconds (superseded)")
    scalar(registry, "TO_TIMESTAMP_LTZ", _infer_to_timestamp_ltz(2), _render_to_timestamp_ltz(2), version=2,
           description="numeric epoch in seconds (precision 0) or milliseconds (precision 3, default)")
    scalar(registry, "UNIX_TIMESTAMP", _infer_unix_timestamp, _render_unix_timestamp, deterministic=False,
           description="seconds since the epoch; now without arguments")
    scalar(registry, "FROM_UNIXTIME", fixed(STRING, "NUMERIC", s, optional=1),
           lambda ctx: fn("from_unixtime", ctx.operands[0], _format_or_default(ctx, 1, DEFAULT_TIMESTAMP_FORMAT)))
    now_ltz = timestamp_ltz(3).with_nullable(False)
    scalar(registry, "CURRENT_DATE", fixed(DATE.with_nullable(False)), lambda ctx: fn("current_date"),
           deterministic=False)
    scalar(registry, "CURRENT_TIME", fixed(time(0).with_nullable(False)), lambda ctx: fn("current_time", number(0)),
           deterministic=False)
    scalar(registry, "CURRENT_TIMESTAMP", fixed(now_ltz), lambda ctx: fn("current_timestamp"), deterministic=False,
           description="fixed per micro-batch on Spark")
    scalar(registry, "NOW", fixed(now_ltz), lambda ctx: fn("current_timestamp"), deterministic=False)
    scalar(registry, "LOCALTIMESTAMP", fixed(timestamp(3).with_nullable(False)),
           lambda ctx: fn("localtimestamp"), deterministic=False)
    scalar(registry, "CURRENT_ROW_TIMESTAMP", fixed(now_ltz), lambda ctx: _now_per_row(), deterministic=False,
           description="wall clock per row")
    scalar(registry, "PROCTIME", fixed(now_ltz.with_time_attribute(TimeAttribute.PROCTIME)),
           lambda ctx: _now_per_row(), deterministic=False, description="processing-time attribute")
    scalar(registry, "CURRENT_WATERMARK", _infer_current_watermark,
           lambda ctx: cast(exp.Null(), ctx.result_type), deterministic=False,
           description="NULL until the runtime substitutes the operator's watermark")
    scalar(registry, "EXTRACT", _infer_extract, _render_extract, description="operands: unit, value")
    for name, unit in (("YEAR", "YEAR"), ("QUARTER", "QUARTER"), ("MONTH", "MONTH"), ("WEEK", "WEEK"),
                       ("DAYOFYEAR", "DOY"), ("DAYOFMONTH", "DAY"), ("DAYOFWEEK", "DOW"), ("HOUR", "HOUR"),
                       ("MINUTE", "MINUTE"), ("SECOND", "SECOND")):
        scalar(registry, name, fixed(BIGINT, "DATETIME"), _field(unit), description=f"EXTRACT({unit} FROM ...)")
    scalar(registry, "TIMESTAMPADD", _infer_timestampadd, _render_timestampadd, description="operands: unit, n, t")
    scalar(registry, "TIMESTAMPDIFF", _infer_timestampdiff, _render_timestampdiff,
           description="whole units from the second to the third operand")


__all__ = ["EXTRACT_UNITS", "normalize_unit", "paren", "register"]
