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
from planengine.types import BIGINT, BOOLEAN, BYTES, DATE, DOUBLE, STRING, DataType, parse_type, timestamp
from planengine.types import decimal as decimal_type

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


@dataclass(frozen=True)
class PythonFunction:
    class_name: str
    call: Callable[..., Any]
    result_type: DataType
    deterministic: bool = True


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
    return PythonFunction(class_name or f"{obj.__module__}.{obj.__qualname__}", call, result, deterministic)
