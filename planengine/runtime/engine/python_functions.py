"""User (Python) functions at run time: registered with Spark before a plan's queries are built.

Plans reference user functions by identifier (plus, under the ``ALL`` strategy, the Python path). The
runtime loads each one — from the plan's path, or from the session's catalog for temporary and
identifier-only references — and registers it with Spark under the simple name the expression renderer
emits. Table functions become array-of-struct UDFs, which the correlate translation explodes like UNNEST.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from planengine.catalog.objects import ObjectIdentifier
from planengine.errors import PlanIncompatible
from planengine.exec.base import topological
from planengine.functions import python_udf
from planengine.functions.spark_types import render_spark_type
from planengine.ir.expressions import Call, Expr, FunctionRef
from planengine.ir.types import DataType, Kind, array, row
from planengine.plan.catalog_objects import CatalogLookup

TABLE_FUNCTION_PREFIX = "__table_fn_"


def user_calls(value: Any) -> Iterator[Call]:
    """Every call of a user function inside an exec node's fields (expressions, nested tuples)."""
    if isinstance(value, Call):
        if not value.function.is_builtin:
            yield value
        for operand in value.operands:
            yield from user_calls(operand)
    elif isinstance(value, Expr):
        for child in value.children():
            yield from user_calls(child)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from user_calls(item)


def resolve(ref: FunctionRef, catalog: CatalogLookup) -> python_udf.PythonFunction:
    if ref.class_name:
        return python_udf.load(ref.class_name)
    parts: tuple[str, ...] = (ref.name,)
    if ref.catalog_identifier is not None:
        parts = ObjectIdentifier.parse(ref.catalog_identifier).as_path()
    found = catalog.function(parts)
    if found is None:
        raise PlanIncompatible(
            f"the plan calls function {ref.catalog_identifier or ref.name}, which is not registered in this session",
            hint="temporary functions are stored in plans by name only: run the CREATE [TEMPORARY] FUNCTION "
                 "statement again before executing the plan")
    return python_udf.load(found.class_name)


def table_function_udf_name(ref: FunctionRef) -> str:
    return TABLE_FUNCTION_PREFIX + ref.name


def produced_row_type(result: DataType) -> DataType:
    """What a table function's UDF returns: an array of its rows (single values become one-field rows)."""
    element = result if result.kind is Kind.ROW else row(("f0", result))
    return array(element)


def register_user_functions(spark: Any, sinks: list[Any], catalog: CatalogLookup) -> None:
    registered: set[str] = set()
    for node in topological(list(sinks)):
        for call in getattr(node, "aggregates", ()) or ():
            ref = getattr(call, "user_function", None)
            if ref is not None and not ref.class_name:
                # Temporary functions are in plans by name only: resolve the class here, on the driver, so the
                # operator (pickled to the workers) can load it there without the session's catalog.
                object.__setattr__(ref, "class_name", resolve(ref, catalog).class_name)
        values = [getattr(node, f.name) for f in node.node_fields()]
        for call in user_calls(values):
            if call.function.name in registered:
                continue
            fn = resolve(call.function, catalog)
            if getattr(node, "table_function", False) and call is getattr(node, "invocation", None):
                _register_table_function(spark, call, fn)
                registered.add(table_function_udf_name(call.function))
                continue
            spark.udf.register(call.function.name, _null_safe(fn.call), render_spark_type(call.type))
            registered.add(call.function.name)


def _register_table_function(spark: Any, call: Call, fn: python_udf.PythonFunction) -> None:
    wrapped = fn.call

    def rows(*args: Any) -> list[tuple[Any, ...]]:
        out = []
        for produced in wrapped(*args) or ():
            out.append(tuple(produced) if isinstance(produced, tuple | list) else (produced,))
        return out

    spark.udf.register(table_function_udf_name(call.function), rows,
                       render_spark_type(produced_row_type(call.type)))


def _null_safe(fn: Any) -> Any:
    """Spark passes NULL as None; a user function that raises on None would fail the whole query."""

    def call(*args: Any) -> Any:
        return fn(*args)

    return call
