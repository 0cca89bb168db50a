"""Name resolution: relations, their qualified fields, and the expression scope over them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

from sqlglot import exp

from planengine.catalog.objects import ObjectIdentifier
from planengine.errors import SourceLocation, UnsupportedQueryError, ValidationError
from planengine.functions.registry import FunctionRegistry
from planengine.ir.expressions import Expr, FieldAccess, InputRef
from planengine.ir.types import DataType, Kind
from planengine.planner import logical as L


class CatalogAccess:
    """What the converter needs from the catalog manager (kept narrow so tests can plan without one)."""

    def qualify(self, parts: tuple[str, ...]) -> ObjectIdentifier:  # pragma: no cover - protocol
        raise NotImplementedError

    def get_table(self, identifier: ObjectIdentifier) -> Any:  # returns an entry with .object, .is_temporary
        raise NotImplementedError


@dataclass
class _Field:
    qualifier: str | None
    name: str
    type: DataType


@dataclass
class Relation:
    """A converted FROM item: the node plus the names it can be referred to by."""

    node: L.LogicalNode
    fields: list[_Field]

    @staticmethod
    def of(node: L.LogicalNode, qualifier: str | None) -> Relation:
        return Relation(node, [_Field(qualifier, f.name, f.type) for f in node.row_type.fields])


class _Scope:
    """Column resolution over one relation, plus an optional outer scope for correlated sub-queries."""

    def __init__(self, relation: Relation, converter: Any,
                 special: Callable[[exp.Expression, Callable[[exp.Expression], Expr]], Expr | None] | None = None):
        self.relation = relation
        self.converter = converter
        self.special = special

    def resolve_column(self, column: exp.Column) -> Expr:
        name = column.name
        qualifier = column.table or None
        parts = [p.name for p in column.parts]
        matches = [i for i, f in enumerate(self.relation.fields)
                   if f.name == name and (qualifier is None or f.qualifier == qualifier)]
        if len(matches) == 1:
            f = self.relation.fields[matches[0]]
            return InputRef(matches[0], f.type)
        if len(matches) > 1:
            raise ValidationError(
                f"column '{name}' is ambiguous", location=self.converter.location(column),
                hint="qualify it with a table name or alias, e.g. "
                     + " or ".join(f"{f.qualifier}.{name}" for f in (self.relation.fields[i] for i in matches)
                                   if f.qualifier),
            )
        # Nested field access: `r.f` where r is a ROW column, or `t.r.f`.
        if len(parts) >= 2:
            for start in range(len(parts) - 1):
                head_qualifier = parts[start - 1] if start > 0 else None
                head = parts[start]
                idx = [i for i, f in enumerate(self.relation.fields)
                       if f.name == head and (head_qualifier is None or f.qualifier == head_qualifier)]
                if len(idx) == 1:
                    expr: Expr = InputRef(idx[0], self.relation.fields[idx[0]].type)
                    for part in parts[start + 1:]:
                        t = expr.type
                        if t.kind is not Kind.ROW or part not in t.field_names():
                            break
                        ft = t.fields[t.field_index(part)].type
                        expr = FieldAccess(expr, part, ft.with_nullable(ft.nullable or t.nullable))
                    else:
                        return expr
        available = ", ".join(sorted({(f"{f.qualifier}." if f.qualifier else "") + f.name
                                      for f in self.relation.fields}))

        close = get_close_matches(name, [f.name for f in self.relation.fields], n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValidationError(
            f"column '{column.sql()}' not found", location=self.converter.location(column),
            hint=f"{hint}available columns: {available}",
        )

    def convert_special(self, node: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
        if self.special is not None:
            result = self.special(node, convert)
            if result is not None:
                return result
        if isinstance(node, exp.Anonymous):
            user = self.converter.user_function(node, convert)
            if user is not None:
                return user
        if isinstance(node, exp.Subquery | exp.Exists) or (isinstance(node, exp.In) and node.args.get("query")):
            raise UnsupportedQueryError(
                "sub-queries are supported only as IN / EXISTS predicates in WHERE (combined with AND)",
                location=self.converter.location(node),
                hint="rewrite the scalar sub-query as a JOIN",
            )
        return None


@dataclass
class PlannerContext:
    catalogs: CatalogAccess
    registry: FunctionRegistry
    config: dict[str, str] = field(default_factory=dict)
    statement_location: SourceLocation | None = None

