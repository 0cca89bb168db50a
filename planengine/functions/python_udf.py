"""User-defined Python functions: ``CREATE [TEMPORARY] [SYSTEM] FUNCTION f AS 'pkg.mod.name' LANGUAGE PYTHON``.

The planner imports the named object once to learn its result type (as Flink instantiates a UDF for type
inference). Declare it with the ``udf`` decorator, a ``result_type`` attribute, or a return annotation:

>>> @udf(result_type="BIGINT")
... def plus_one(x):
...     return None if x is None else x + 1
>>> describe(plus_one).result_type
DataType(BIGINT)

A class works too (Flink's ScalarFunction style): its instances are called through ``eval``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planengine.errors import ValidationError
from planengine.ir.types import BIGINT, BOOLEAN, BYTES, DATE, DOUBLE, STRING, DataType, parse_type, timestamp
from planengine.ir.types import decimal as decimal_type

_ANNOTATIONS: dict[Any, DataType] = {
    int: BIGINT, float: DOUBLE, str: STRING, bool: BOOLEAN, bytes: BYTES, dt.date: DATE,
    dt.datetime: timestamp(3), decimal.Decimal: decimal_type(38, 18),
    "int": BIGINT, "float": DOUBLE, "str": STRING, "bool": BOOLEAN, "bytes": BYTES,
}


def udf(result_type: str, deterministic: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a Python scalar function's SQL result type (a type string such as ``'DECIMAL(10, 2)'``)."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.result_type = result_type  # type: ignore[attr-defined]
        fn.deterministic = deterministic  # type: ignore[attr-defined]
        return fn

    return mark


def udtf(result_type: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a Python table function (a generator, or a class whose ``eval`` yields rows); ``result_type``
    is a ROW type (``'ROW<word STRING, length INT>'``) or a single column type."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.result_type = result_type  # type: ignore[attr-defined]
        fn.function_kind = "table"  # type: ignore[attr-defined]
        return fn

    return mark


@dataclass(frozen=True)
class PythonFunction:
    """A loaded user function. ``kind`` is scalar, table (yields rows) or aggregate (accumulator protocol:
    ``create_accumulator()``, ``accumulate(acc, *args)``, optional ``retract(acc, *args)``, ``get_value(acc)``)."""

    class_name: str
    call: Callable[..., Any]
    result_type: DataType
    deterministic: bool = True
    kind: str = "scalar"
    instance: Any = None


def load(class_name: str) -> PythonFunction:
    module_name, _, attr = class_name.rpartition(".")
    if not module_name:
        raise ValidationError(f"function class {class_name!r} is not a 'module.name' path",
                              hint="write AS 'my_package.my_module.my_function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValidationError(f"cannot import module {module_name!r} of function {class_name!r}: {error}",
                              hint="install the package on the driver and executors, or fix the path") from None
    if not hasattr(module, attr):
        raise ValidationError(f"module {module_name!r} has no {attr!r}", hint=f"check the name in AS '{class_name}'")
    return describe(getattr(module, attr), class_name)


def describe(obj: Any, class_name: str | None = None) -> PythonFunction:
    target = obj() if inspect.isclass(obj) else obj
    if all(callable(getattr(target, m, None)) for m in ("create_accumulator", "accumulate", "get_value")):
        declared = getattr(target, "result_type", None)
        if declared is None and callable(getattr(target, "get_result_type", None)):
            declared = target.get_result_type()
        if declared is None:
            raise ValidationError(f"aggregate function {class_name or obj!r} declares no result type",
                                  hint="set a class attribute result_type = 'BIGINT' (a SQL type string)")
        result = declared if isinstance(declared, DataType) else parse_type(str(declared))
        return PythonFunction(class_name or f"{obj.__module__}.{obj.__qualname__}", target.get_value, result,
                              bool(getattr(target, "deterministic", True)), "aggregate", target)
    call = getattr(target, "eval", target)
    if not callable(call):
        raise ValidationError(f"{class_name or obj!r} is not callable", hint="define a function or a class with eval")
    declared = getattr(target, "result_type", None) or getattr(call, "result_type", None)
    if declared is None:
        annotation = inspect.signature(call).return_annotation
        declared = _ANNOTATIONS.get(annotation)
        if declared is None:
            raise ValidationError(
                f"cannot tell the SQL result type of Python function {class_name or obj!r}",
                hint="decorate it with @planengine.functions.python_udf.udf(result_type='BIGINT') or annotate its "
                     "return type (int, float, str, bool, bytes, date, datetime, Decimal)")
    result = declared if isinstance(declared, DataType) else parse_type(str(declared))
    deterministic = bool(getattr(target, "deterministic", getattr(call, "deterministic", True)))
    kind = getattr(target, "function_kind", getattr(call, "function_kind", None))
    if kind is None:
        kind = "table" if inspect.isgeneratorfunction(call) else "scalar"
    return PythonFunction(class_name or f"{obj.__module__}.{obj.__qualname__}", call, result, deterministic, kind,
                          target)
