"""Shared pieces of SQL → logical conversion: name tables, expression helpers, small utilities."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from planengine.errors import SourceLocation, ValidationError
from planengine.functions.registry import FunctionRegistry
from planengine.ir.expressions import Call, Expr, FunctionRef, InputRef, Literal, conjunctions
from planengine.ir.types import BOOLEAN, DataType, Kind, common_type
from planengine.ir.windows import WindowSpec
from planengine.planner import logical as L

# sqlglot aggregate classes → built-in aggregate names.
_AGGREGATES: dict[type[exp.Expression], str] = {
    exp.Count: "COUNT",
    exp.Sum: "SUM",
    exp.Avg: "AVG",
    exp.Min: "MIN",
    exp.Max: "MAX",
    exp.FirstValue: "FIRST_VALUE",
    exp.LastValue: "LAST_VALUE",
    exp.Stddev: "STDDEV_SAMP",
    exp.StddevPop: "STDDEV_POP",
    exp.StddevSamp: "STDDEV_SAMP",
    exp.Variance: "VAR_SAMP",
    exp.VariancePop: "VAR_POP",
    exp.GroupConcat: "LISTAGG",
    exp.ArrayAgg: "COLLECT",
    exp.LogicalAnd: "BOOL_AND",
    exp.LogicalOr: "BOOL_OR",
}
_RANKING: dict[type[exp.Expression], str] = {
    exp.RowNumber: "ROW_NUMBER",
    exp.Rank: "RANK",
    exp.DenseRank: "DENSE_RANK",
    exp.Lag: "LAG",
    exp.Lead: "LEAD",
}
_GROUP_WINDOWS = {"TUMBLE", "HOP", "SESSION"}
_GROUP_WINDOW_PROPERTIES = {
    f"{w}_{p}": (w, p.lower()) for w in _GROUP_WINDOWS for p in ("START", "END", "ROWTIME", "PROCTIME")
}




def token_start_column(meta: dict[str, Any]) -> int | None:
    """sqlglot records a token's *end* column; report where it starts."""
    col = meta.get("col")
    if col is None:
        return None
    start, end = meta.get("start"), meta.get("end")
    if start is not None and end is not None:
        return max(1, col - (end - start))
    return col


def _identity(node: L.LogicalNode) -> tuple[Expr, ...]:
    return tuple(InputRef(i, t) for i, t in enumerate(node.field_types))


def _column(name: str, qualifier: str | None) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True),
                      table=exp.to_identifier(qualifier, quoted=True) if qualifier else None)


def _output_name(p: exp.Expression, i: int) -> str:
    if isinstance(p, exp.Alias):
        return p.alias
    if isinstance(p, exp.Column):
        return p.name
    if isinstance(p, exp.Dot):
        return p.name
    return f"EXPR${i}"


def _dedupe(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            candidate = f"{n}{seen[n] - 1}"
            while candidate in seen:
                seen[n] += 1
                candidate = f"{n}{seen[n] - 1}"
            seen[candidate] = 1
            out.append(candidate)
        else:
            seen[n] = 1
            out.append(n)
    return out


# One generator for leaves (literals, columns): nothing in them for the generator to rewrite, so neither a copy
# of the node nor a new generator per call is needed (the conversion asks for thousands in a long expression).
_LEAF_GENERATOR = Dialect().generator(normalize=False, comments=False)


def _norm(node: exp.Expression) -> str:
    """A comparable form of an expression (case-insensitive identifiers, no aliases)."""
    if isinstance(node, exp.Column | exp.Literal | exp.Identifier):
        text = _LEAF_GENERATOR.generate(node, copy=False)
    else:
        text = node.sql(normalize=False, comments=False)
    return text.lower().replace("`", "").replace('"', "")


class SqlLengthBound:
    """A lower bound of ``len(_norm(node))``, so a caller can skip printing a subtree that cannot equal a short
    key: printing every node of a deep tree to compare it with GROUP BY keys is quadratic (a 5000-term sum, or
    1500 nested ABS calls, took minutes). Every leaf prints at least one character, and so does at least every
    second level of nesting (wrappers such as a column around its identifier print nothing of their own), so
    the bound is ``max(leaves, height // 2)``. Computed once per node, iteratively (the trees are deep)."""

    def __init__(self) -> None:
        self._sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (leaves, height)

    def __call__(self, node: exp.Expression) -> int:
        memo = self._sizes
        stack: list[tuple[exp.Expression, bool]] = [(node, False)]
        while stack:
            current, children_done = stack.pop()
            if id(current) in memo:
                continue
            children = list(current.iter_expressions())
            if not children:
                memo[id(current)] = (1, 1)
            elif children_done:
                sizes = [memo[id(c)] for c in children]
                memo[id(current)] = (sum(s[0] for s in sizes), 1 + max(s[1] for s in sizes))
            else:
                stack.append((current, True))
                stack.extend((c, False) for c in children if id(c) not in memo)
        leaves, height = memo[id(node)]
        return max(leaves, height // 2)


def _window_key(w: exp.Window) -> str:
    parts = [w.args.get("partition_by") or [], w.args.get("order"), w.args.get("spec")]
    return repr([(_norm(p) if isinstance(p, exp.Expression) else [_norm(x) for x in p]) if p is not None else None
                 for p in parts])


def _inside_window(node: exp.Expression) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Window):
            return True
        parent = parent.parent
    return False


def _split_and(predicate: exp.Expression) -> list[exp.Expression]:
    """The conjuncts, left to right; iterative, since a generated WHERE may chain thousands of ANDs."""
    conjuncts: list[exp.Expression] = []
    pending = [predicate]
    while pending:
        node = pending.pop()
        if isinstance(node, exp.Paren):
            pending.append(node.this)
        elif isinstance(node, exp.And):
            pending.extend((node.expression, node.this))
        else:
            conjuncts.append(node)
    return conjuncts


def _is_subquery_predicate(pred: exp.Expression) -> bool:
    inner = pred.this if isinstance(pred, exp.Not) else pred
    if isinstance(inner, exp.Paren):
        inner = inner.this
    return isinstance(inner, exp.Exists) or (isinstance(inner, exp.In) and inner.args.get("query") is not None)


def _validate_window(spec: WindowSpec, location: SourceLocation | None) -> None:
    def positive(value: dt.timedelta | None, label: str) -> None:
        if value is not None and value <= dt.timedelta(0):
            raise ValidationError(f"{spec.kind} {label} must be positive", location=location)

    positive(spec.size, "size")
    positive(spec.slide, "slide")
    positive(spec.step, "step")
    positive(spec.gap, "gap")
    if spec.kind == "HOP" and spec.size and spec.slide and spec.size % spec.slide:
        raise ValidationError("HOP size must be an integral multiple of the slide", location=location,
                              hint=f"size {spec.size} is not a multiple of slide {spec.slide}")
    if spec.kind == "CUMULATE" and spec.size and spec.step and spec.size % spec.step:
        raise ValidationError("CUMULATE max size must be an integral multiple of the step", location=location)


def _cast_literal(value: Expr, target: DataType) -> Literal:
    assert isinstance(value, Literal)
    if value.type == target:
        return value
    v = value.value
    if v is not None and target.is_numeric and not isinstance(v, bool):
        if target.kind is Kind.DECIMAL:
            v = decimal.Decimal(str(v))
        elif target.kind in (Kind.FLOAT, Kind.DOUBLE):
            v = float(v)
    return Literal(v, target.with_nullable(value.value is None or target.nullable))


def cast_to(expr: Expr, target: DataType) -> Expr:
    """An explicit CAST, unless the types already agree (ignoring time-attribute markers)."""
    if expr.type.without_time_attribute() == target.without_time_attribute():
        return expr
    if expr.type.without_time_attribute().with_nullable(True) == target.with_nullable(True) and target.nullable:
        return expr
    return Call(FunctionRef("CAST", 1), (expr,), target.without_time_attribute().with_nullable(
        target.nullable or expr.type.nullable))


def equals(left: Expr, right: Expr, registry: FunctionRegistry) -> Expr:
    nullable = left.type.nullable or right.type.nullable
    if left.type.without_time_attribute().with_nullable(True) != right.type.without_time_attribute().with_nullable(
            True):
        common = common_type([left.type.without_time_attribute(), right.type.without_time_attribute()])
        if common is not None:
            left, right = cast_to(left, common), cast_to(right, common)
    fn = registry.resolve("=")
    return Call(FunctionRef("=", fn.version if fn else 1), (left, right), BOOLEAN.with_nullable(nullable))


def and_all(preds: list[Expr], registry: FunctionRegistry) -> Expr | None:
    flat: list[Expr] = []
    for p in preds:
        flat.extend(conjunctions(p))
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    fn = registry.resolve("AND")
    return Call(FunctionRef("AND", fn.version if fn else 1), tuple(flat),
                BOOLEAN.with_nullable(any(p.type.nullable for p in flat)))

