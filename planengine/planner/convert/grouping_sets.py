"""``GROUP BY GROUPING SETS (...) | ROLLUP (...) | CUBE (...)``, planned as Flink does: Expand + aggregate.

The GROUP BY list becomes its grouping sets (SQL's rules: ``ROLLUP (a, b)`` = ``(a, b), (a), ()``, ``CUBE
(a, b)`` = ``(a, b), (a), (b), ()``, several elements combine as a cross product), over the distinct key
expressions in order of first appearance. An **Expand** node then emits each input row once per grouping set,
with the keys outside the set set to NULL and the set's id in an extra ``$e`` column; the aggregate groups by
all keys plus ``$e``, so a NULL that stands for "all values" never mixes with a NULL key value. ``$e`` is
Flink's expand id: one bit per key, the first key the highest bit, set when the key is *not* in the set
(``ExpandUtil.genExpandId``), which is also what ``GROUPING_ID`` returns; ``GROUPING(k)`` is that key's bit.
Aggregate arguments that are also keys read an untouched copy of the column, so ``COUNT(k)`` in a
rolled-up row still counts the values of ``k``.

>>> from planengine.sql import parse_query
>>> def sets(sql):
...     found = grouping_sets(list(parse_query(f"SELECT 1 FROM t GROUP BY {sql}").args["group"].expressions))
...     return None if found is None else ([k.sql() for k in found[0]], found[1])
>>> sets("ROLLUP (a, b)")
(['a', 'b'], [(0, 1), (0,), ()])
>>> sets("CUBE (a, b)")
(['a', 'b'], [(0, 1), (0,), (1,), ()])
>>> sets("a, GROUPING SETS ((b, c), ())")
(['a', 'b', 'c'], [(0, 1, 2), (0,)])
>>> sets("a, b") is None
True
>>> expand_id(3, (0,)), expand_id(3, (0, 2)), expand_id(3, ())
(3, 2, 7)
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from sqlglot import exp

from planengine.errors import UnsupportedQueryError
from planengine.functions.registry import NO_LITERAL, CallContext, FunctionRegistry
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import Call, Expr, FunctionRef, InputRef, Literal
from planengine.ir.types import BIGINT
from planengine.planner import logical as L
from planengine.planner.convert.support import _dedupe, _norm

EXPAND_ID = "$e"
_ID_TYPE = BIGINT.with_nullable(False)

_GROUPING_FORMS = (exp.GroupingSets, exp.Rollup, exp.Cube)


def has_grouping_sets(group_exprs: list[exp.Expression]) -> bool:
    return any(isinstance(g, _GROUPING_FORMS) for g in group_exprs)


def grouping_sets(group_exprs: list[exp.Expression]) -> tuple[list[exp.Expression], list[tuple[int, ...]]] | None:
    """The distinct key expressions and the grouping sets as key positions; None for a plain GROUP BY."""
    if not has_grouping_sets(group_exprs):
        return None
    combined: list[list[exp.Expression]] = [[]]
    for element in group_exprs:
        combined = [[*left, *right] for left in combined for right in _element_sets(element)]
    keys: list[exp.Expression] = []
    position: dict[str, int] = {}
    result: list[tuple[int, ...]] = []
    for group_set in combined:
        members: list[int] = []
        for e in group_set:
            key = _norm(e)
            if key not in position:
                position[key] = len(keys)
                keys.append(e)
            if position[key] not in members:
                members.append(position[key])
        result.append(tuple(sorted(members)))
    seen: set[tuple[int, ...]] = set()
    for group_set in result:
        if group_set in seen:
            written = ", ".join(keys[i].sql("flink") for i in group_set)
            raise UnsupportedQueryError(
                f"the grouping set ({written}) appears twice; planengine does not support duplicate grouping "
                "sets (Flink's GROUP_ID())", hint="list each grouping set once")
        seen.add(group_set)
    return keys, result


def _element_sets(element: exp.Expression) -> list[list[exp.Expression]]:
    """The grouping sets one GROUP BY element stands for, each a list of key expressions."""
    if isinstance(element, exp.GroupingSets):
        return [s for member in element.expressions for s in _member_sets(member)]
    if isinstance(element, exp.Rollup):
        units = [_unit(e) for e in element.expressions]
        return [[e for unit in units[:n] for e in unit] for n in range(len(units), -1, -1)]
    if isinstance(element, exp.Cube):
        units = [_unit(e) for e in element.expressions]
        # Calcite's order: (a, b), (a), (b), () -- subsets by the bit pattern of left-out units
        masks = sorted(itertools.product((True, False), repeat=len(units)), key=lambda m: (-sum(m), [not b for b in m]))
        return [[e for keep, unit in zip(mask, units) if keep for e in unit] for mask in masks]
    return [_unit(element)]


def _member_sets(member: exp.Expression) -> list[list[exp.Expression]]:
    """One member of GROUPING SETS (...): a tuple, a parenthesised expression, ROLLUP / CUBE, or a key."""
    if isinstance(member, exp.Rollup | exp.Cube | exp.GroupingSets):
        return _element_sets(member)
    return [_unit(member)]


def _unit(e: exp.Expression) -> list[exp.Expression]:
    if isinstance(e, exp.Tuple):
        return list(e.expressions)
    if isinstance(e, exp.Paren):
        return _unit(e.this)
    if isinstance(e, _GROUPING_FORMS):
        raise UnsupportedQueryError(f"{e.sql('flink')} cannot be nested here",
                                    hint="write GROUPING SETS of plain expressions, ROLLUP or CUBE")
    return [e]


def expand_id(key_count: int, group_set: tuple[int, ...]) -> int:
    """Flink's ``$e`` for a grouping set: bit ``key_count - 1 - i`` is set when key ``i`` is not in the set."""
    return sum(1 << (key_count - 1 - i) for i in range(key_count) if i not in group_set)


def grouping_value(key_positions: list[int], key_count: int, group_set: tuple[int, ...]) -> int:
    """``GROUPING_ID(k1, …, kn)`` for one grouping set (``GROUPING(k)`` is the one-key case): bit ``n - 1 - j``
    set when ``kj`` is not in the set."""
    n = len(key_positions)
    return sum(1 << (n - 1 - j) for j, k in enumerate(key_positions) if k not in group_set)


def expand(pre: L.LogicalNode, group_keys: list[int], sets: list[tuple[int, ...]], aggregates: list[AggregateCall]
           ) -> tuple[L.LogicalExpand, tuple[int, ...], list[AggregateCall]]:
    """The Expand over ``pre`` (the aggregate's input projection) and what the aggregate then groups by and
    computes: all keys plus ``$e``; aggregate arguments that are keys re-pointed at untouched copies."""
    width = len(pre.field_names)
    types = pre.field_types
    position = {field: p for p, field in enumerate(group_keys)}
    copies: dict[int, int] = {}
    for call in aggregates:
        for arg in (*call.args, *([call.filter_arg] if call.filter_arg is not None else [])):
            if arg in position and arg not in copies:
                copies[arg] = width + 1 + len(copies)
    projects = []
    for group_set in sets:
        fields: list[Expr] = [Literal(None, types[j].without_time_attribute().with_nullable(True))
                              if j in position and position[j] not in group_set else InputRef(j, types[j])
                              for j in range(width)]
        fields.append(Literal(expand_id(len(group_keys), group_set), _ID_TYPE))
        fields += [InputRef(field, types[field]) for field in copies]
        projects.append(tuple(fields))
    names = _dedupe([*pre.field_names, EXPAND_ID, *(pre.field_names[field] for field in copies)])
    node = L.LogicalExpand(pre, tuple(projects), tuple(names))
    remapped = [replace(call, args=tuple(copies.get(a, a) for a in call.args),
                        filter_arg=copies.get(call.filter_arg, call.filter_arg) if call.filter_arg is not None
                        else None) for call in aggregates]
    return node, (*group_keys, width), remapped


def grouping_call(registry: FunctionRegistry, expand_ref: InputRef, key_positions: list[int], key_count: int,
                  sets: list[tuple[int, ...]]) -> Expr:
    """``GROUPING(k)`` / ``GROUPING_ID(k1, …)`` over the aggregate's ``$e``: a CASE over the set ids (BIGINT NOT
    NULL, as in Flink), or a literal when every set gives the same value."""
    values = [(expand_id(key_count, s), grouping_value(key_positions, key_count, s)) for s in sets]
    if len({v for _, v in values}) == 1:
        return Literal(values[0][1], _ID_TYPE)
    operands: list[Expr] = []
    for set_id, value in values[:-1]:
        operands += [_call(registry, "=", [expand_ref, Literal(set_id, _ID_TYPE)]), Literal(value, _ID_TYPE)]
    operands.append(Literal(values[-1][1], _ID_TYPE))
    return _call(registry, "CASE", operands)


def _call(registry: FunctionRegistry, name: str, operands: list[Expr]) -> Call:
    fn = registry.resolve(name)
    assert fn is not None, name
    ctx = CallContext(fn.name, tuple(o.type for o in operands),
                      tuple(o.value if isinstance(o, Literal) else NO_LITERAL for o in operands), None)
    return Call(FunctionRef(fn.name, fn.version), tuple(operands), fn.infer_type(ctx))
