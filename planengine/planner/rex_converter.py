"""Parsed SQL scalar expressions (sqlglot, Flink dialect) to typed plan expressions.

``convert_expression`` walks a sqlglot tree bottom-up. Every node is first offered to the scope's
``convert_special`` (aggregates, window functions, sub-queries, correlated references and legacy group
windows belong to the planner); everything else becomes an ``InputRef`` (through ``resolve_column``), a
``Literal`` typed as Flink types literals, or a ``Call`` to a registered built-in whose type comes from
the built-in's own inference. Where Flink coerces implicitly (comparing INT with BIGINT, or a string
literal with a timestamp), the converter inserts an explicit ``CAST`` so plans show exactly what runs.

``fold_constant`` evaluates a deterministic call over literals, for the constant-folding rule.
"""

from __future__ import annotations

import datetime as dt
import decimal
import difflib
import math
import re
from collections.abc import Callable
from typing import Any, Protocol

from sqlglot import exp

from planengine.errors import SourceLocation, ValidationError
from planengine.functions.defaults import default_registry
from planengine.functions.registry import NO_LITERAL, CallContext, FunctionKind, FunctionRegistry
from planengine.ir.expressions import Call, Expr, FieldAccess, FunctionRef, Literal
from planengine.ir.types import (
    BOOLEAN,
    CHARACTER,
    DATE,
    DOUBLE,
    INT,
    INTERVAL_DAY_TIME,
    INTERVAL_YEAR_MONTH,
    NULL,
    DataType,
    Kind,
    char,
    common_type,
    parse_type,
    time,
    timestamp,
    timestamp_ltz,
)
from planengine.ir.types import (
    decimal as decimal_type,
)
from planengine.sql import render_type

__all__ = ["ExprScope", "convert_expression", "fold_constant", "literal_type"]


class ExprScope(Protocol):
    def resolve_column(self, column: exp.Column) -> Expr:
        """The expression a column reference stands for; raise ValidationError if it is unknown."""
        ...

    def convert_special(self, node: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
        """Called first for every node; return None to let the converter continue."""
        ...


def convert_expression(node: exp.Expression, scope: ExprScope, registry: FunctionRegistry | None = None) -> Expr:
    """Convert one parsed scalar expression into a typed plan expression."""
    return _Converter(scope, registry or default_registry()).convert(node)


# --- literals ----------------------------------------------------------------------------------------------
def literal_type(value: Any) -> DataType:
    """Flink's type for a literal value: ``1`` INT, ``3000000000`` BIGINT, ``1.5`` DECIMAL(2, 1), ``'ab'``
    CHAR(2), all NOT NULL; ``None`` is the NULL type."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        t = BOOLEAN
    elif isinstance(value, int):
        if -(2**31) <= value < 2**31:
            t = INT
        elif -(2**63) <= value < 2**63:
            t = DataType(Kind.BIGINT)
        else:
            t = decimal_type(min(38, len(str(abs(value)))), 0)
    elif isinstance(value, decimal.Decimal):
        _, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        precision = max(len(digits), scale, 1)
        t = decimal_type(precision, scale)
    elif isinstance(value, float):
        t = DOUBLE
    elif isinstance(value, str):
        t = char(len(value))
    else:
        raise ValidationError(f"unsupported literal {value!r}")
    return t.with_nullable(False)


_INTERVAL_UNITS = ("YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND")
_SECONDS = {"DAY": 86400, "HOUR": 3600, "MINUTE": 60, "SECOND": 1}
_TIMESTAMP_TYPES = {
    exp.DataType.Type.DATE: "DATE",
    exp.DataType.Type.TIME: "TIME",
    exp.DataType.Type.TIMESTAMP: "TIMESTAMP",
    exp.DataType.Type.TIMESTAMPLTZ: "TIMESTAMP_LTZ",
}


_MAX_INTERVAL_MONTHS = 2**31 - 1  # Flink's INTERVAL YEAR TO MONTH is an INT of months


def _interval_literal(node: exp.Interval) -> Literal:
    text = node.this.name if node.this is not None else ""
    unit = node.args.get("unit")
    if isinstance(unit, exp.IntervalSpan):
        first, last = unit.this.name.upper(), unit.expression.name.upper()
    else:
        first = last = (unit.name if unit is not None else "").upper()
    first, last = first.rstrip("S") if first.endswith("S") else first, last.rstrip("S") if last.endswith("S") else last
    if first not in _INTERVAL_UNITS or last not in _INTERVAL_UNITS:
        raise ValidationError(f"unsupported interval unit in {node.sql()}", hint="use YEAR, MONTH, DAY, HOUR, "
                              "MINUTE or SECOND, e.g. INTERVAL '5' SECOND")
    text = text.strip()
    negative = text.startswith("-")
    text = text.lstrip("+-")
    try:
        if first in ("YEAR", "MONTH"):
            if first == "YEAR" and last == "MONTH":
                years, months = text.split("-")
                total = int(years) * 12 + int(months)
            else:
                total = int(text) * (12 if first == "YEAR" else 1)
            if abs(total) > _MAX_INTERVAL_MONTHS:
                raise ValueError(text)
            return Literal(-total if negative else total, INTERVAL_YEAR_MONTH.with_nullable(False))
        units = [u for u in ("DAY", "HOUR", "MINUTE", "SECOND")
                 if _INTERVAL_UNITS.index(first) <= _INTERVAL_UNITS.index(u) <= _INTERVAL_UNITS.index(last)]
        parts = re.split(r"[ :]", text)
        if len(parts) != len(units):
            raise ValueError(text)
        seconds = sum(decimal.Decimal(p) * _SECONDS[u] for p, u in zip(parts, units))
        if not seconds.is_finite():
            raise ValueError(text)
        delta = dt.timedelta(milliseconds=int(seconds * 1000))
    except (ValueError, ArithmeticError):  # ArithmeticError: decimal.InvalidOperation ('abc'), OverflowError
        raise ValidationError(f"invalid interval literal {node.sql()}",
                              hint="write a number of the unit within ±999999999 days, e.g. INTERVAL '5' SECOND or "
                                   "INTERVAL '1 02:03:04.5' DAY TO SECOND") from None
    return Literal(-delta if negative else delta, INTERVAL_DAY_TIME.with_nullable(False))


def _typed_literal(kind: str, text: str) -> Literal:
    """``DATE '…'``, ``TIME '…'``, ``TIMESTAMP '…'``: the precision is the number of fraction digits."""
    text = text.strip()
    try:
        if kind == "DATE":
            return Literal(dt.date.fromisoformat(text), DATE.with_nullable(False))
        fraction = text.rsplit(".", 1)[1] if "." in text else ""
        precision = len(fraction)
        if kind == "TIME":
            return Literal(dt.time.fromisoformat(text), time(precision).with_nullable(False))
        value = dt.datetime.fromisoformat(text.replace("T", " "))
    except ValueError:
        raise ValidationError(f"invalid {kind} literal '{text}'",
                              hint="write DATE 'yyyy-MM-dd', TIME 'HH:mm:ss' or "
                              "TIMESTAMP 'yyyy-MM-dd HH:mm:ss[.fff]'") from None
    t = timestamp(precision) if kind == "TIMESTAMP" else timestamp_ltz(precision)
    return Literal(value, t.with_nullable(False))


_MAX_DECIMAL_DIGITS = 38


def _number_literal(text: str) -> Literal:
    """``1`` INT, ``1.5`` DECIMAL, ``1e3`` DOUBLE; like Flink, a literal beyond DECIMAL(38) or DOUBLE is an error."""
    out_of_range = ValidationError(
        f"numeric literal {text[:40]}{'…' if len(text) > 40 else ''} is out of range",
        hint=f"exact numbers have at most {_MAX_DECIMAL_DIGITS} digits and DOUBLE reaches about 1.8E308; "
             "write a smaller number or a DOUBLE with an exponent such as 1.5E40")
    if "e" in text.lower():
        try:
            value: Any = float(text)
        except ValueError:  # e.g. "1e" left by an edit
            raise ValidationError(f"invalid numeric literal {text[:40]}", hint="write e.g. 1.5E3") from None
        if math.isinf(value):
            raise out_of_range
        return Literal(value, literal_type(value))
    if len(text.split(".")[0].lstrip("0")) > _MAX_DECIMAL_DIGITS:  # before int(): 5000 digits exceed its limit
        raise out_of_range
    value = int(text) if re.fullmatch(r"[0-9]+", text) else decimal.Decimal(text)
    if isinstance(value, decimal.Decimal):
        _, digits, exponent = value.as_tuple()
        if max(len(digits), -int(exponent)) > _MAX_DECIMAL_DIGITS:
            raise out_of_range
    return Literal(value, literal_type(value))


def _type_text(node: exp.DataType) -> DataType:
    return parse_type(render_type(node))


def _location(node: exp.Expression) -> SourceLocation | None:
    for candidate in [node, *node.find_all(exp.Identifier, exp.Literal)]:
        meta = getattr(candidate, "meta", None) or {}
        if "line" in meta:
            col = meta.get("col")
            if col is not None and meta.get("start") is not None and meta.get("end") is not None:
                col = max(1, col - (meta["end"] - meta["start"]))  # sqlglot records the token's end column
            return SourceLocation(line=meta.get("line"), column=col)
    return None


# --- node classes to function names --------------------------------------------------------------------------
_BINARY = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.EQ: "=", exp.NEQ: "<>",
    exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.And: "AND", exp.Or: "OR", exp.DPipe: "||",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM", exp.SimilarTo: "SIMILAR TO",
    exp.Pow: "POWER", exp.Left: "LEFT", exp.Right: "RIGHT", exp.Nullif: "NULLIF",
}
_UNARY = {
    exp.Upper: "UPPER", exp.Lower: "LOWER", exp.Initcap: "INITCAP", exp.Length: "CHAR_LENGTH", exp.Reverse: "REVERSE",
    exp.MD5: "MD5", exp.SHA: "SHA1", exp.ToBase64: "TO_BASE64", exp.FromBase64: "FROM_BASE64", exp.Ascii: "ASCII",
    exp.Abs: "ABS", exp.Sqrt: "SQRT", exp.Exp: "EXP", exp.Ln: "LN", exp.Sign: "SIGN", exp.Year: "YEAR",
    exp.Quarter: "QUARTER", exp.Month: "MONTH", exp.Week: "WEEK", exp.DayOfYear: "DAYOFYEAR",
    exp.DayOfMonth: "DAYOFMONTH", exp.DayOfWeek: "DAYOFWEEK", exp.Hour: "HOUR", exp.Minute: "MINUTE",
    exp.Second: "SECOND",
}
_NILADIC = {
    exp.CurrentTimestamp: "CURRENT_TIMESTAMP", exp.CurrentDate: "CURRENT_DATE", exp.CurrentTime: "CURRENT_TIME",
    exp.Localtimestamp: "LOCALTIMESTAMP", exp.Pi: "PI", exp.Uuid: "UUID",
}
_AGGREGATES = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX", exp.FirstValue: "FIRST_VALUE",
    exp.LastValue: "LAST_VALUE", exp.StddevPop: "STDDEV_POP", exp.StddevSamp: "STDDEV_SAMP",
    exp.VariancePop: "VAR_POP", exp.Variance: "VAR_SAMP", exp.LogicalAnd: "BOOL_AND", exp.LogicalOr: "BOOL_OR",
}
_ALIASES = {"CEILING": "CEIL", "LENGTH": "CHAR_LENGTH", "CHARACTER_LENGTH": "CHAR_LENGTH", "LOCALTIME":
            "CURRENT_TIME", "POW": "POWER", "SHA": "SHA1", "VARIANCE": "VAR_SAMP", "STDDEV": "STDDEV_SAMP",
            "CONCAT_WS": "CONCAT_WS", "SUBSTR": "SUBSTRING", "IFNULL": "IFNULL"}
_COMPARISONS = ("=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM")
_NEGATED = {"LIKE": "NOT LIKE", "BETWEEN": "NOT BETWEEN", "IN": "NOT IN", "IS NULL": "IS NOT NULL",
            "IS TRUE": "IS NOT TRUE", "IS FALSE": "IS NOT FALSE"}


_STRING_NOT_NULL = DataType(Kind.VARCHAR, length=2147483647, nullable=False)


def _flag(value: str) -> Literal:
    """Units and other keywords travel as ``Literal(str, STRING NOT NULL)`` operands."""
    return Literal(value.upper(), _STRING_NOT_NULL)


class _Converter:
    def __init__(self, scope: ExprScope, registry: FunctionRegistry):
        self.scope = scope
        self.registry = registry

    # --- entry ---------------------------------------------------------------------------------------------
    def convert(self, node: exp.Expression) -> Expr:
        special = self.scope.convert_special(node, self.convert)
        if special is not None:
            return special
        try:
            return self._convert(node)
        except ValidationError as error:
            if error.location is None:
                location = _location(node)
                if location is not None:
                    raise type(error)(error.message, location=location, hint=error.hint) from None
            raise

    def _convert(self, node: exp.Expression) -> Expr:
        c = self.convert
        if isinstance(node, exp.Paren):
            return c(node.this)
        if isinstance(node, exp.Column):
            return self.scope.resolve_column(node)
        if isinstance(node, exp.Dot):
            return self._field_access(c(node.this), node.expression.name)
        if isinstance(node, exp.Literal):
            return Literal(node.this, literal_type(node.this)) if node.is_string else _number_literal(node.this)
        if isinstance(node, exp.Boolean):
            return Literal(bool(node.this), BOOLEAN.with_nullable(False))
        if isinstance(node, exp.Null):
            return Literal(None, NULL)
        if isinstance(node, exp.Interval):
            return _interval_literal(node)
        if isinstance(node, exp.TryCast):
            return self.call("TRY_CAST", [c(node.this)], target=_type_text(node.args["to"]))
        if isinstance(node, exp.Cast):
            return self._cast(node)
        if isinstance(node, exp.Neg):
            inner = c(node.this)
            if isinstance(inner, Literal) and isinstance(inner.value, int | float | decimal.Decimal) \
                    and not isinstance(inner.value, bool):
                return Literal(-inner.value, literal_type(-inner.value) if inner.type.kind is not Kind.DECIMAL
                               else inner.type)
            return self.call("NEGATE", [inner])
        if isinstance(node, exp.Not):
            return self._not(node)
        if isinstance(node, exp.Is):
            return self._is(node)
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
            like = node.this
            name = "NOT LIKE" if like.args.get("negate") else "LIKE"
            return self.call(name, [c(like.this), c(like.expression), c(node.expression)])
        if isinstance(node, exp.Like):
            name = "NOT LIKE" if node.args.get("negate") else "LIKE"
            return self.call(name, [c(node.this), c(node.expression)])
        if isinstance(node, exp.Between):
            return self.call("BETWEEN", [c(node.this), c(node.args["low"]), c(node.args["high"])])
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise ValidationError("IN with a sub-query must be planned as a semi-join", hint="this is a "
                                      "planner feature; the expression converter only handles value lists")
            return self.call("IN", [c(node.this), *[c(e) for e in node.expressions]])
        if isinstance(node, exp.Log):
            return self._log(node)
        for cls, name in _BINARY.items():
            if type(node) is cls:
                return self.call(name, [c(node.this), c(node.expression)])
        for cls, name in _UNARY.items():
            if type(node) is cls:
                return self.call(name, [c(node.this)])
        for cls, name in _NILADIC.items():
            if type(node) is cls:
                return self.call(name, [])
        handler = getattr(self, f"_node_{type(node).__name__.lower()}", None)
        if handler is not None:
            return handler(node)
        if isinstance(node, exp.Anonymous):
            name = node.name.upper()
            return self.call(_ALIASES.get(name, name), [c(a) for a in node.expressions], node=node)
        for cls, name in _AGGREGATES.items():
            if type(node) is cls:
                return self._aggregate(name, node)
        if isinstance(node, exp.Window):
            raise ValidationError(f"window function {node.this.sql()} is only allowed in the SELECT list of a query")
        if isinstance(node, exp.Func):
            return self.call(node.sql_name(), [c(a) for a in _func_args(node)], node=node)
        raise ValidationError(f"unsupported expression {node.sql()!r}")

    # --- calls ---------------------------------------------------------------------------------------------
    def call(self, name: str, operands: list[Expr], *, target: DataType | None = None,
             node: exp.Expression | None = None) -> Expr:
        fn = self.registry.resolve(name)
        if fn is None:
            raise self._unknown(name)
        if fn.name in _COMPARISONS or fn.name in ("BETWEEN", "NOT BETWEEN", "IN", "NOT IN"):
            operands = coerce_comparison(operands, self.registry)
        ctx = CallContext(fn.name, tuple(o.type for o in operands),
                          tuple(o.value if isinstance(o, Literal) else NO_LITERAL for o in operands), target)
        result = fn.infer_type(ctx)
        return Call(FunctionRef(fn.name, fn.version), tuple(operands), result)

    def _unknown(self, name: str) -> ValidationError:
        names = sorted({f.name for f in self.registry.all() if re.fullmatch(r"[A-Z_][A-Z0-9_]*", f.name)})
        close = difflib.get_close_matches(name.upper(), names, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}?" if close else \
            "register a user function with CREATE FUNCTION, or see SHOW FUNCTIONS"
        return ValidationError(f"unknown function {name}", hint=hint)

    def _aggregate(self, name: str, node: exp.Expression) -> Expr:
        arg = node.this
        if isinstance(arg, exp.Distinct):
            raise ValidationError(f"{name}(DISTINCT ...) must be planned as an aggregate",
                                  hint="aggregates belong in the SELECT list of a grouped query")
        operands = [] if arg is None or isinstance(arg, exp.Star) else [self.convert(arg)]
        operands += [self.convert(e) for e in node.expressions] if node.args.get("expressions") else []
        return self.call(name, operands, node=node)

    def _cast(self, node: exp.Cast) -> Expr:
        target = _type_text(node.args["to"])
        inner = node.this
        kind = _TIMESTAMP_TYPES.get(node.to.this)
        if kind and isinstance(inner, exp.Literal) and inner.is_string and not node.to.expressions:
            return _typed_literal(kind, inner.this)
        return self.call("CAST", [self.convert(inner)], target=target)

    def _not(self, node: exp.Not) -> Expr:
        inner = node.this.unnest() if isinstance(node.this, exp.Paren) else node.this
        converted = self.convert(inner)
        if isinstance(converted, Call) and converted.name in _NEGATED and converted.function.is_builtin \
                and not isinstance(inner, exp.Paren):
            return self.call(_NEGATED[converted.name], list(converted.operands))
        return self.call("NOT", [converted])

    def _is(self, node: exp.Is) -> Expr:
        target = node.expression
        value = self.convert(node.this)
        if isinstance(target, exp.Null):
            return self.call("IS NULL", [value])
        if isinstance(target, exp.Boolean):
            return self.call("IS TRUE" if target.this else "IS FALSE", [value])
        raise ValidationError(f"unsupported IS test {node.sql()!r}")

    def _log(self, node: exp.Log) -> Expr:
        if node.expression is None:
            return self.call("LOG", [self.convert(node.this)])
        base = node.this
        if isinstance(base, exp.Literal) and base.this in ("10", "2"):
            return self.call("LOG10" if base.this == "10" else "LOG2", [self.convert(node.expression)])
        return self.call("LOG", [self.convert(base), self.convert(node.expression)])

    def _field_access(self, base: Expr, name: str) -> Expr:
        if base.type.kind is not Kind.ROW:
            raise ValidationError(f"cannot access field {name!r} of {base.type}")
        for f in base.type.fields:
            if f.name == name:
                return FieldAccess(base, name, f.type.with_nullable(f.type.nullable or base.type.nullable))
        raise ValidationError(f"{base.type} has no field {name!r}",
                              hint=f"fields are {', '.join(base.type.field_names())}")

    # --- nodes with their own argument shapes ---------------------------------------------------------------
    def _node_case(self, node: exp.Case) -> Expr:
        c = self.convert
        subject = c(node.this) if node.this is not None else None
        operands: list[Expr] = []
        for branch in node.args.get("ifs") or []:
            cond = c(branch.this)
            if subject is not None:
                cond = self.call("=", [subject, cond])
            operands += [cond, c(branch.args["true"])]
        default = node.args.get("default")
        operands.append(c(default) if default is not None else Literal(None, NULL))
        return self.call("CASE", operands)

    def _node_if(self, node: exp.If) -> Expr:
        false = node.args.get("false")
        return self.call("IF", [self.convert(node.this), self.convert(node.args["true"]),
                                self.convert(false) if false is not None else Literal(None, NULL)])

    def _node_coalesce(self, node: exp.Coalesce) -> Expr:
        operands = [self.convert(node.this), *[self.convert(e) for e in node.expressions]]
        return self.call("COALESCE", operands)

    def _node_greatest(self, node: exp.Expression) -> Expr:
        return self.call("GREATEST", [self.convert(node.this), *[self.convert(e) for e in node.expressions]])

    def _node_least(self, node: exp.Expression) -> Expr:
        return self.call("LEAST", [self.convert(node.this), *[self.convert(e) for e in node.expressions]])

    def _node_trim(self, node: exp.Trim) -> Expr:
        position = (node.args.get("position") or "BOTH").upper()
        chars = node.expression
        return self.call("TRIM", [_flag(position), self.convert(chars) if chars is not None else
                                  Literal(" ", char(1).with_nullable(False)), self.convert(node.this)])

    def _node_substring(self, node: exp.Substring) -> Expr:
        operands = [self.convert(node.this), self.convert(node.args["start"])]
        if node.args.get("length") is not None:
            operands.append(self.convert(node.args["length"]))
        return self.call("SUBSTRING", operands)

    def _node_strposition(self, node: exp.StrPosition) -> Expr:
        operands = [self.convert(node.args["substr"]), self.convert(node.this)]
        if node.args.get("position") is not None:
            return self.call("LOCATE", [*operands, self.convert(node.args["position"])])
        return self.call("POSITION", operands)

    def _node_concat(self, node: exp.Concat) -> Expr:
        return self.call("CONCAT", [self.convert(e) for e in node.expressions])

    def _node_concatws(self, node: exp.ConcatWs) -> Expr:
        return self.call("CONCAT_WS", [self.convert(e) for e in node.expressions])

    def _node_pad(self, node: exp.Pad) -> Expr:
        fill = node.args.get("fill_pattern")
        operands = [self.convert(node.this), self.convert(node.expression),
                    self.convert(fill) if fill is not None else Literal(" ", char(1).with_nullable(False))]
        return self.call("LPAD" if node.args.get("is_left") else "RPAD", operands)

    def _node_regexpextract(self, node: exp.RegexpExtract) -> Expr:
        operands = [self.convert(node.this), self.convert(node.expression)]
        index = node.args.get("group") or node.args.get("position")
        if index is not None:
            operands.append(self.convert(index))
        return self.call("REGEXP_EXTRACT", operands)

    def _node_regexpreplace(self, node: exp.RegexpReplace) -> Expr:
        return self.call("REGEXP_REPLACE", [self.convert(node.this), self.convert(node.expression),
                                            self.convert(node.args["replacement"])])

    def _node_replace(self, node: exp.Expression) -> Expr:
        return self.call("REPLACE", [self.convert(node.this), self.convert(node.expression),
                                     self.convert(node.args["replacement"])])

    def _node_regexplike(self, node: exp.RegexpLike) -> Expr:
        return self.call("REGEXP", [self.convert(node.this), self.convert(node.expression)])

    def _node_sha2(self, node: exp.Expression) -> Expr:
        return self.call("SHA256", [self.convert(node.this)])

    def _node_repeat(self, node: exp.Expression) -> Expr:
        return self.call("REPEAT", [self.convert(node.this), self.convert(node.args["times"])])

    def _node_chr(self, node: exp.Chr) -> Expr:
        return self.call("CHR", [self.convert(e) for e in node.expressions])

    def _ceil_floor(self, name: str, node: exp.Expression) -> Expr:
        unit = node.args.get("to")
        if unit is not None:
            return self.call(name, [self.convert(node.this), _flag(unit.name)])
        return self.call(name, [self.convert(node.this)])

    def _node_ceil(self, node: exp.Ceil) -> Expr:
        return self._ceil_floor("CEIL", node)

    def _node_floor(self, node: exp.Floor) -> Expr:
        return self._ceil_floor("FLOOR", node)

    def _node_round(self, node: exp.Round) -> Expr:
        digits = node.args.get("decimals")
        return self.call("ROUND", [self.convert(node.this), *([self.convert(digits)] if digits is not None else [])])

    def _node_trunc(self, node: exp.Expression) -> Expr:
        digits = node.args.get("decimals")
        return self.call("TRUNCATE", [self.convert(node.this),
                                      *([self.convert(digits)] if digits is not None else [])])

    def _node_rand(self, node: exp.Rand) -> Expr:
        return self.call("RAND", [self.convert(node.this)] if node.this is not None else [])

    def _node_extract(self, node: exp.Extract) -> Expr:
        return self.call("EXTRACT", [_flag(node.this.name), self.convert(node.expression)])

    def _node_timestampadd(self, node: exp.Expression) -> Expr:
        unit = _flag(node.args["unit"].name)
        return self.call("TIMESTAMPADD", [unit, self.convert(node.expression), self.convert(node.this)])

    def _node_timestampdiff(self, node: exp.Expression) -> Expr:
        unit = _flag(node.args["unit"].name)
        return self.call("TIMESTAMPDIFF", [unit, self.convert(node.expression), self.convert(node.this)])

    def _node_array(self, node: exp.Array) -> Expr:
        return self.call("ARRAY", [self.convert(e) for e in node.expressions])

    def _node_tuple(self, node: exp.Tuple) -> Expr:
        return self.call("ROW", [self.convert(e) for e in node.expressions])

    def _node_bracket(self, node: exp.Bracket) -> Expr:
        base = node.this
        if isinstance(base, exp.Column) and base.name.upper() == "MAP" and not base.table:
            return self.call("MAP", [self.convert(e) for e in node.expressions])
        if len(node.expressions) != 1:
            raise ValidationError(f"a subscript takes one index: {node.sql()}")
        return self.call("ITEM", [self.convert(base), self.convert(node.expressions[0])])

    def _node_jsonvalue(self, node: exp.Expression) -> Expr:
        path = node.args.get("path")
        path_expr = Literal(path.sql(), literal_type(path.sql())) if isinstance(path, exp.JSONPath) \
            else self.convert(path)
        returning = node.args.get("returning")
        target = _type_text(returning) if isinstance(returning, exp.DataType) else None
        return self.call("JSON_VALUE", [self.convert(node.this), path_expr], target=target)


def _func_args(node: exp.Func) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            out.extend(v for v in value if isinstance(v, exp.Expression))
        elif isinstance(value, exp.Expression):
            out.append(value)
    return out


# --- implicit coercion ---------------------------------------------------------------------------------------
def coerce_comparison(operands: list[Expr], registry: FunctionRegistry) -> list[Expr]:
    """Give every operand of a comparison the same type, with explicit CASTs (as Flink's planner does).

    Numbers widen to their common type; a string literal compared with a date/time/number/boolean is
    cast to that type; a DATE compared with a TIMESTAMP is cast to the TIMESTAMP.
    """
    types = [o.type for o in operands]
    concrete = [t for t in types if t.kind is not Kind.NULL]
    if not concrete:
        return operands
    target: DataType | None = None
    if all(t.is_numeric for t in concrete):
        target = common_type(concrete)
    else:
        non_string = [t for t in concrete if t.kind not in CHARACTER]
        kinds = {t.kind for t in non_string}
        if non_string and len(kinds) == 1 and any(t.kind in CHARACTER for t in concrete):
            target = non_string[0]
        elif kinds == {Kind.DATE, Kind.TIMESTAMP} or kinds == {Kind.DATE, Kind.TIMESTAMP_LTZ}:
            target = next(t for t in non_string if t.kind is not Kind.DATE)
        elif len(kinds) == 1 and kinds <= {Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ}:
            return operands
    if target is None:
        return operands
    cast_fn = registry.resolve("CAST")
    assert cast_fn is not None
    out: list[Expr] = []
    for o in operands:
        t = o.type
        same = t.kind == target.kind and (t.kind is not Kind.DECIMAL or (t.precision, t.scale) ==
                                           (target.precision, target.scale))
        if same or t.kind is Kind.NULL:
            out.append(o)
            continue
        if t.kind in CHARACTER and not isinstance(o, Literal):
            out.append(o)  # only literals are coerced from strings; the comparison will reject the pair
            continue
        goal = target.without_time_attribute().with_nullable(t.nullable)
        if isinstance(o, Literal) and t.is_numeric and goal.is_numeric:
            converted = fold_constant(Call(FunctionRef(cast_fn.name, cast_fn.version), (o,), goal), registry)
            if converted is not None:
                out.append(converted)
                continue
        out.append(Call(FunctionRef(cast_fn.name, cast_fn.version), (o,), goal))
    return out


# --- constant folding ------------------------------------------------------------------------------------------
def fold_constant(call: Call, registry: FunctionRegistry | None = None) -> Literal | None:
    """The value of a deterministic built-in call whose operands are all literals, or None when the
    call is outside the folded subset (or would fail, or overflow: then the runtime reports it)."""
    if not call.function.is_builtin or not all(isinstance(o, Literal) for o in call.operands):
        return None
    fn = (registry or default_registry()).get(call.function.name, call.function.version or 1)
    if not fn.deterministic or fn.kind is not FunctionKind.SCALAR:
        return None
    evaluate = _FOLDERS.get(fn.name)
    if evaluate is None:
        return None
    values = [o.value for o in call.operands if isinstance(o, Literal)]
    types = [o.type for o in call.operands]
    try:
        value = _conform(evaluate(values, types, call.type), call.type)
    except (ArithmeticError, ValueError, TypeError, decimal.InvalidOperation, _NotFoldable):
        return None
    return Literal(value, call.type)


class _NotFoldable(Exception):
    pass


_INT_RANGE = {Kind.TINYINT: 8, Kind.SMALLINT: 16, Kind.INT: 32, Kind.BIGINT: 64}


def _conform(value: Any, t: DataType) -> Any:
    """Make a folded value fit its type exactly (or refuse to fold)."""
    if value is None:
        return None
    if t.kind in _INT_RANGE:
        bits = _INT_RANGE[t.kind]
        if not -(2 ** (bits - 1)) <= int(value) < 2 ** (bits - 1):
            raise _NotFoldable
        return int(value)
    if t.kind is Kind.DECIMAL:
        quantum = decimal.Decimal(1).scaleb(-(t.scale or 0))
        result = decimal.Decimal(value).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
        if len(result.as_tuple().digits) > (t.precision or 38):
            raise _NotFoldable
        return result
    if t.kind in (Kind.FLOAT, Kind.DOUBLE):
        return float(value)
    return value


def _strict(op: Callable[..., Any]) -> Callable[[list[Any], list[DataType], DataType], Any]:
    """NULL in, NULL out."""
    return lambda values, types, result: None if any(v is None for v in values) else op(*values)


def _numeric(values: list[Any], result: DataType) -> list[Any]:
    if result.kind is Kind.DECIMAL:
        return [decimal.Decimal(str(v)) if isinstance(v, float) else decimal.Decimal(v) for v in values]
    if result.kind in (Kind.FLOAT, Kind.DOUBLE):
        return [float(v) for v in values]
    return values


def _arith(op: str) -> Callable[[list[Any], list[DataType], DataType], Any]:
    def evaluate(values: list[Any], types: list[DataType], result: DataType) -> Any:
        if any(v is None for v in values):
            return None
        if not all(t.is_numeric for t in types):
            raise _NotFoldable  # temporal arithmetic is left to the runtime
        a, b = _numeric(values, result)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            raise _NotFoldable
        if op == "/":
            if result.is_integral:
                q = abs(a) // abs(b)
                return q if (a >= 0) == (b >= 0) else -q
            if result.kind is Kind.DECIMAL:
                with decimal.localcontext() as ctx:
                    ctx.prec = 60
                    return a / b
            return a / b
        r = abs(a) % abs(b)  # % takes the dividend's sign
        return r if a >= 0 else -r

    return evaluate


def _compare(op: Callable[[Any, Any], bool]) -> Callable[[list[Any], list[DataType], DataType], Any]:
    def evaluate(values: list[Any], types: list[DataType], result: DataType) -> Any:
        a, b = values
        if a is None or b is None:
            return None
        if isinstance(a, str) != isinstance(b, str):
            raise _NotFoldable
        return op(a, b)

    return evaluate


def _and(values: list[Any], types: list[DataType], result: DataType) -> Any:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values: list[Any], types: list[DataType], result: DataType) -> Any:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _cast(values: list[Any], types: list[DataType], result: DataType) -> Any:
    value, source = values[0], types[0]
    if value is None:
        return None
    k = result.kind
    if k in CHARACTER:
        if source.kind is Kind.BOOLEAN:
            text = "TRUE" if value else "FALSE"
        elif source.kind in CHARACTER or source.is_integral or source.kind is Kind.DECIMAL:
            text = str(value)
        else:
            raise _NotFoldable
        length = result.length or 0
        return text[:length].ljust(length) if k is Kind.CHAR else text[:length]
    if result.is_integral:
        if source.kind in CHARACTER:
            return int(value.strip())
        if source.is_numeric:
            return int(value)  # truncation toward zero, as Flink
        raise _NotFoldable
    if k is Kind.DECIMAL and (source.kind in CHARACTER or source.is_numeric):
        return decimal.Decimal(str(value).strip())
    if k in (Kind.FLOAT, Kind.DOUBLE) and (source.kind in CHARACTER or source.is_numeric):
        return float(str(value).strip()) if source.kind in CHARACTER else float(value)
    if k is Kind.BOOLEAN and source.kind in CHARACTER and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _NotFoldable


_FOLDERS: dict[str, Callable[[list[Any], list[DataType], DataType], Any]] = {
    "+": _arith("+"), "-": _arith("-"), "*": _arith("*"), "/": _arith("/"), "%": _arith("%"), "MOD": _arith("%"),
    "NEGATE": _strict(lambda a: -a),
    "=": _compare(lambda a, b: a == b), "<>": _compare(lambda a, b: a != b), "<": _compare(lambda a, b: a < b),
    "<=": _compare(lambda a, b: a <= b), ">": _compare(lambda a, b: a > b), ">=": _compare(lambda a, b: a >= b),
    "AND": _and, "OR": _or, "NOT": _strict(lambda a: not a),
    "IS NULL": lambda v, t, r: v[0] is None, "IS NOT NULL": lambda v, t, r: v[0] is not None,
    "IS TRUE": lambda v, t, r: v[0] is True, "IS FALSE": lambda v, t, r: v[0] is False,
    "IS NOT TRUE": lambda v, t, r: v[0] is not True, "IS NOT FALSE": lambda v, t, r: v[0] is not False,
    "||": _strict(lambda a, b: a + b), "CONCAT": _strict(lambda *a: "".join(a)),
    "UPPER": _strict(str.upper), "LOWER": _strict(str.lower), "CAST": _cast,
}
