"""String built-ins.

Most map one-to-one onto Spark (both index characters from 1 and share the SQL substring rules). The
renderers repair the places where Spark's function of the same name means something else:
``REGEXP_EXTRACT`` (Flink: whole match by default and NULL when nothing matches; Spark: group 1 and the
empty string), ``SPLIT_INDEX`` (Flink splits on a literal separator, 0-based; Spark's ``split`` takes a
regex), ``FROM_BASE64`` (Flink answers a STRING, Spark BINARY) and ``HASH_CODE`` (Java's
``hashCode``, computed in SQL rather than Spark's Murmur3 ``hash``).
"""

from __future__ import annotations

from sqlglot import exp

from planengine.functions.builtins._support import (
    CallContext,
    FunctionRegistry,
    RenderContext,
    case,
    cast,
    check_arity,
    expect,
    fixed,
    fn,
    nullable_if_args,
    number,
    paren,
    scalar,
)
from planengine.functions.builtins._support import (
    call as spark_call,
)
from planengine.functions.builtins._support import (
    string as string_literal,
)
from planengine.ir.types import BOOLEAN, INT, MAX_LENGTH, STRING, DataType, Kind, char, varchar


def _same_as_first(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    t = expect(ctx, 0, "STRING")
    return STRING.with_nullable(True) if t.kind is Kind.NULL else t.without_time_attribute()


def _varying(t: DataType) -> DataType:
    """Calcite's TO_VARYING: CHAR(n) -> VARCHAR(n), keeping nullability."""
    if t.kind is Kind.NULL:
        return STRING
    return varchar(t.length or MAX_LENGTH).with_nullable(t.nullable)


def _infer_trim(ctx: CallContext) -> DataType:
    check_arity(ctx, 3)
    flag = ctx.literal(0)
    if flag not in ("BOTH", "LEADING", "TRAILING"):
        raise ctx.fail("the first operand must be the flag 'BOTH', 'LEADING' or 'TRAILING'")
    expect(ctx, 1, "STRING")
    t = expect(ctx, 2, "STRING")
    return _varying(t).with_nullable(any(x.nullable for x in ctx.operand_types[1:]))


def _render_trim(ctx: RenderContext) -> exp.Expression:
    _flag, chars, value = ctx.operands
    return exp.Trim(this=value, expression=chars, position=ctx.literal(0))


def _infer_side_trim(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, 2)
    for i in range(len(ctx.operand_types)):
        expect(ctx, i, "STRING")
    return nullable_if_args(_varying(ctx.operand_types[0]), ctx)


def _render_side_trim(position: str):
    def render(ctx: RenderContext) -> exp.Expression:
        chars = ctx.operands[1] if len(ctx.operands) > 1 else string_literal(" ")
        return exp.Trim(this=ctx.operands[0], expression=chars, position=position)

    return render


def _infer_substring(ctx: CallContext) -> DataType:
    check_arity(ctx, 2, 3)
    t = expect(ctx, 0, "STRING")
    for i in range(1, len(ctx.operand_types)):
        expect(ctx, i, "INTEGER")
    return nullable_if_args(_varying(t), ctx)


def _infer_concat_ws(ctx: CallContext) -> DataType:
    check_arity(ctx, 2, None)
    for i in range(len(ctx.operand_types)):
        expect(ctx, i, "STRING")
    sep = ctx.operand_types[0]
    return STRING.with_nullable(sep.nullable or sep.kind is Kind.NULL)


def _render_regexp_extract(ctx: RenderContext) -> exp.Expression:
    value, pattern = ctx.operands[0], ctx.operands[1]
    index = ctx.operands[2] if len(ctx.operands) > 2 else number(0)
    matches = exp.RegexpLike(this=paren(value), expression=pattern)
    return case((matches, fn("regexp_extract", value, pattern, index)))


def quote_regex(separator: exp.Expression, literal: object) -> exp.Expression:
    """A Java regex matching ``separator`` literally (``\\Q...\\E``)."""
    if isinstance(literal, str) and "\\E" not in literal:
        return string_literal("\\Q" + literal + "\\E")
    return fn("concat", string_literal("\\Q"), separator, string_literal("\\E"))


def _render_split_index(ctx: RenderContext) -> exp.Expression:
    value, separator, index = ctx.operands
    parts = fn("split", value, quote_regex(separator, ctx.literal(1)), number(-1))
    element = fn("try_element_at", parts, exp.Add(this=paren(index), expression=number(1)))
    return case((exp.LT(this=paren(index), expression=number(0)), exp.Null()), default=element)


def _render_hash_code(ctx: RenderContext) -> exp.Expression:
    value = ctx.operands[0]
    source = ctx.operand_types[0]
    two32 = number(4294967296)
    if source.kind in (Kind.CHAR, Kind.VARCHAR):
        h, c = exp.column("__h"), exp.column("__c")
        step = fn("pmod", exp.Add(this=exp.Mul(this=h, expression=number(31)), expression=fn("ascii", c)), two32)
        lam = exp.Lambda(this=step, expressions=[exp.to_identifier("__h"), exp.to_identifier("__c")])
        unsigned = fn("aggregate", fn("split", value, string_literal("")), cast(number(0), _BIGINT), lam)
    elif source.kind is Kind.BIGINT:
        mixed = exp.BitwiseXor(this=paren(value), expression=fn("shiftrightunsigned", value, number(32)))
        unsigned = fn("pmod", mixed, two32)
    elif source.kind is Kind.BOOLEAN:
        return case((value, number(1231)), default=number(1237))
    else:
        return cast(value, INT)
    return cast(case((exp.GTE(this=unsigned, expression=number(2147483648)),
                      exp.Sub(this=unsigned, expression=two32)), default=unsigned), INT)


_BIGINT = DataType(Kind.BIGINT)


def _infer_hash_code(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    t = ctx.operand_types[0]
    if t.kind not in (Kind.CHAR, Kind.VARCHAR, Kind.TINYINT, Kind.SMALLINT, Kind.INT, Kind.BIGINT, Kind.BOOLEAN,
                      Kind.NULL):
        raise ctx.fail(f"HASH_CODE supports strings, integers and booleans, not {t}")
    return nullable_if_args(INT, ctx)


def _pattern_test(regex: str):
    return lambda ctx: exp.RegexpLike(this=paren(ctx.operands[0]), expression=string_literal(regex))


def register(registry: FunctionRegistry) -> None:
    s = "STRING"
    scalar(registry, "UPPER", _same_as_first, spark_call("upper"))
    scalar(registry, "LOWER", _same_as_first, spark_call("lower"))
    scalar(registry, "INITCAP", _same_as_first, spark_call("initcap"),
           description="words split on whitespace in Spark")
    scalar(registry, "TRIM", _infer_trim, _render_trim, description="operands: flag, characters, string")
    scalar(registry, "LTRIM", _infer_side_trim, _render_side_trim("LEADING"))
    scalar(registry, "RTRIM", _infer_side_trim, _render_side_trim("TRAILING"))
    scalar(registry, "SUBSTRING", _infer_substring, spark_call("substring"), description="1-based")
    scalar(registry, "SUBSTR", _infer_substring, spark_call("substring"), description="1-based")
    scalar(registry, "CHAR_LENGTH", fixed(INT, s), spark_call("char_length"), description="code points")
    scalar(registry, "CONCAT", fixed(STRING, s, variadic=s), spark_call("concat"), description="NULL if any NULL")
    scalar(registry, "||", fixed(STRING, s, s), spark_call("concat"), description="string concatenation")
    scalar(registry, "CONCAT_WS", _infer_concat_ws, spark_call("concat_ws"), description="skips NULL strings")
    scalar(registry, "REPLACE", fixed(STRING, s, s, s), spark_call("replace"))
    scalar(registry, "REGEXP_REPLACE", fixed(STRING, s, s, s), spark_call("regexp_replace"))
    scalar(registry, "REGEXP_EXTRACT", fixed(STRING, s, s, "INTEGER", optional=1, always_nullable=True),
           _render_regexp_extract, description="index 0 (whole match) by default; NULL when no match")
    scalar(registry, "REGEXP", fixed(BOOLEAN, s, s),
           lambda ctx: exp.RegexpLike(this=paren(ctx.operands[0]), expression=ctx.operands[1]),
           description="true when the regex matches a part of the string")
    scalar(registry, "SPLIT_INDEX", fixed(STRING, s, s, "INTEGER", always_nullable=True), _render_split_index,
           description="0-based; NULL out of range")
    scalar(registry, "LPAD", fixed(STRING, s, "INTEGER", s), spark_call("lpad"))
    scalar(registry, "RPAD", fixed(STRING, s, "INTEGER", s), spark_call("rpad"))
    scalar(registry, "REPEAT", fixed(STRING, s, "INTEGER"), spark_call("repeat"))
    scalar(registry, "REVERSE", fixed(STRING, s), spark_call("reverse"))
    scalar(registry, "POSITION", fixed(INT, s, s), spark_call("locate"), description="POSITION(needle IN haystack)")
    scalar(registry, "LOCATE", fixed(INT, s, s, "INTEGER", optional=1), spark_call("locate"))
    scalar(registry, "INSTR", fixed(INT, s, s), spark_call("instr"))
    scalar(registry, "LEFT", fixed(STRING, s, "INTEGER"), spark_call("left"))
    scalar(registry, "RIGHT", fixed(STRING, s, "INTEGER"), spark_call("right"))
    scalar(registry, "MD5", fixed(char(32), s), spark_call("md5"), description="hex of the UTF-8 bytes")
    scalar(registry, "SHA1", fixed(char(40), s), spark_call("sha1"))
    scalar(registry, "SHA256", fixed(char(64), s), lambda ctx: fn("sha2", ctx.operands[0], number(256)))
    scalar(registry, "TO_BASE64", fixed(STRING, s), spark_call("base64"))
    scalar(registry, "FROM_BASE64", fixed(STRING, s),
           lambda ctx: fn("decode", fn("unbase64", ctx.operands[0]), string_literal("UTF-8")))
    scalar(registry, "ASCII", fixed(INT, s), spark_call("ascii"))
    scalar(registry, "CHR", fixed(char(1), "INTEGER"), spark_call("chr"))
    scalar(registry, "HASH_CODE", _infer_hash_code, _render_hash_code, description="Java hashCode")
    scalar(registry, "UUID", fixed(char(36).with_nullable(False)), spark_call("uuid"), deterministic=False)
    scalar(registry, "IS_ALPHA", fixed(BOOLEAN, s), _pattern_test("^\\p{L}+$"), description="letters only")
    scalar(registry, "IS_DIGIT", fixed(BOOLEAN, s), _pattern_test("^\\p{Nd}+$"), description="digits only")
