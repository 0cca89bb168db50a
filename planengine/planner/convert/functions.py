"""User (Python) functions resolved Flink's way after built-ins, LATERAL TABLE calls of table
functions, and CROSS/LEFT JOIN UNNEST."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from planengine.errors import UnsupportedQueryError, ValidationError
from planengine.functions import python_udf
from planengine.ir.expressions import Call, Expr, FunctionRef
from planengine.ir.types import Kind
from planengine.planner import logical as L
from planengine.planner.convert.scope import Relation, _Field, _Scope


class FunctionConversion:
    """Mixin of ``QueryConverter``."""

    def resolve_user_function(self, node: exp.Anonymous) -> tuple[FunctionRef, Any] | None:
        """A catalog or temporary (system) Python function, resolved Flink's way (built-ins first)."""
        name = node.name
        if self.ctx.registry.resolve(name) is not None:
            return None
        resolve = getattr(self.ctx.catalogs, "resolve_function", None)
        found = resolve((name,)) if resolve is not None else None
        if found is None:
            return None

        kind, ident, function = found
        try:
            loaded = python_udf.load(function.class_name)
        except ValidationError as error:
            raise ValidationError(error.message, location=self.location(node), hint=error.hint) from None
        if kind == "system":
            ref = FunctionRef(str(ident), None, system=True, class_name=function.class_name, temporary=True)
        else:
            temporary = bool(getattr(self.ctx.catalogs, "is_temporary_function", lambda _i: False)(ident))
            ref = FunctionRef(ident.name, None, catalog_identifier=str(ident), class_name=function.class_name,
                              temporary=temporary)
        return ref, loaded

    def user_function(self, node: exp.Anonymous, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
        resolved = self.resolve_user_function(node)
        if resolved is None:
            return None
        ref, loaded = resolved
        if loaded.kind != "scalar":
            raise ValidationError(
                f"{node.name} is a {loaded.kind} function and cannot be called as a scalar here",
                location=self.location(node),
                hint="call table functions with LATERAL TABLE(...) and aggregate functions in an aggregation")
        return Call(ref, tuple(convert(a) for a in node.expressions), loaded.result_type)

    def _lateral_table(self, left: Relation, lateral: exp.Lateral, side: str, on: exp.Expression | None
                       ) -> Relation:
        """``LATERAL TABLE(f(args)) AS T(a, b)``: a correlated call of a Python table function."""
        inner = lateral.this
        call = inner.expressions[0] if isinstance(inner, exp.Anonymous) and inner.name.upper() == "TABLE" \
            and inner.expressions else inner
        if not isinstance(call, exp.Anonymous):
            raise UnsupportedQueryError(f"unsupported LATERAL {inner.sql()}", location=self.location(lateral))
        resolved = self.resolve_user_function(call)
        if resolved is None or resolved[1].kind != "table":
            # Flink's temporal table functions (``LATERAL TABLE(Rates(o.rowtime))``) come from its Table API
            # (createTemporalTableFunction) and have no SQL definition: say what to write instead.
            raise ValidationError(
                f"{call.name} is not a table function", location=self.location(lateral),
                hint="for a temporal table function (LATERAL TABLE(Rates(o.rowtime)), not supported by planengine) "
                     "join the versioned table instead: JOIN Rates FOR SYSTEM_TIME AS OF o.rowtime ON <key> (Rates "
                     "with a PRIMARY KEY and a WATERMARK); for a Python table function, register a generator with "
                     "@udtf(result_type='ROW<...>') via CREATE TEMPORARY FUNCTION ... LANGUAGE PYTHON")
        if on is not None and not (isinstance(on, exp.Boolean) and on.this is True):
            raise UnsupportedQueryError("LEFT JOIN LATERAL TABLE supports only ON TRUE", location=self.location(on))
        ref, loaded = resolved
        scope = _Scope(left, self)
        invocation = Call(ref, tuple(self.expr(a, scope) for a in call.expressions), loaded.result_type)
        t = loaded.result_type
        produced = t.field_names() if t.kind is Kind.ROW else ["f0"]
        alias = lateral.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else produced
        if len(names) != len(produced):
            raise ValidationError(f"{call.name} produces {len(produced)} columns but the alias names {len(names)}",
                                  location=self.location(lateral))
        node = L.LogicalCorrelate(left.node, invocation, tuple(names), "LEFT" if side == "LEFT" else "INNER",
                                  False, table_function=True)
        qualifier = alias.name if alias is not None and alias.name else None
        return Relation(node, left.fields + [_Field(qualifier, f.name, f.type) for f in node.element_fields()])

    def _unnest(self, left: Relation, unnest: exp.Unnest, side: str) -> Relation:
        scope = _Scope(left, self)
        operands = unnest.expressions
        if len(operands) != 1:
            raise UnsupportedQueryError("UNNEST takes exactly one array, map or multiset",
                                        location=self.location(unnest))
        arg = self.expr(operands[0], scope)
        if arg.type.kind not in (Kind.ARRAY, Kind.MAP, Kind.MULTISET):
            raise ValidationError(f"UNNEST needs an ARRAY, MAP or MULTISET, got {arg.type}",
                                  location=self.location(unnest))
        alias = unnest.args.get("alias")
        ordinality = bool(unnest.args.get("offset"))
        if arg.type.kind is Kind.MAP:
            width = 2
        elif arg.type.element is not None and arg.type.element.kind is Kind.ROW:
            width = len(arg.type.element.fields)
        else:
            width = 1
        width += 1 if ordinality else 0
        if alias is not None and alias.columns:
            names = [c.name for c in alias.columns]
        elif arg.type.element is not None and arg.type.element.kind is Kind.ROW:
            names = arg.type.element.field_names()
        else:
            names = [f"EXPR${i}" for i in range(width)]
        if len(names) != width:
            raise ValidationError(f"UNNEST produces {width} columns but the alias names {len(names)}",
                                  location=self.location(unnest))
        node = L.LogicalCorrelate(left.node, arg, tuple(names), "LEFT" if side == "LEFT" else "INNER", ordinality)
        qualifier = alias.name if alias is not None and alias.name else None
        fields_ = left.fields + [_Field(qualifier, f.name, f.type) for f in node.element_fields()]
        return Relation(node, fields_)
