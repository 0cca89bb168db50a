"""Each JVM family's spec is a pair, a Java record and a Python dataclass: this checks the two have the same fields.

The Java side is listed by ``io.planengine.jvm.testing.SpecRecords`` (every record of ``io.planengine.jvm.spec``, its
components with their Java types, as JSON); the Python side is ``planengine.runtime.jvm.specs.SPECS``. Both are
reduced to one vocabulary and compared by name: the record ``DeduplicateSpec`` with the dataclass
``DeduplicateSpec``, the component ``stateTtlMs`` with the field ``state_ttl_ms`` (``specs.camel``), and

========================================  ===========================================  ==========================
Python                                    Java                                         shape
========================================  ===========================================  ==========================
``int``                                   ``int``, ``long``, ``Integer``, ``Long``     ``int``
``bool``                                  ``boolean``, ``Boolean``                     ``bool``
``str``                                   ``String``                                   ``str``
``SparkType`` (DDL text)                  ``DataType`` (parsed)                        ``spark_type``
a nested dataclass ``X``                  the record ``X`` of the same package         ``X``
``tuple[T, ...]``                         ``T[]``, ``List<T>``                         ``list[T]``
``T | None``                              ``@Nullable T``                              ``optional[T]``
========================================  ===========================================  ==========================

A field on one side only, a type that maps to another shape, a dataclass without a record or a record without a
dataclass is a mismatch. ``python -m tests.jvm.run`` (the ``jvm`` step) runs the check after the Java unit tests
and counts each pair as one test; ``tests/jvm/test_spec_pairs.py`` tests the comparison itself.

>>> shape_of_python(tuple[int, ...] | None)
'optional[list[int]]'
>>> shape_of_java({"array": {"class": "int"}, "nullable": True})
'optional[list[int]]'
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from planengine.runtime.jvm.specs import JvmSpec, SparkType, camel

JAVA_SCALARS = {
    "int": "int", "long": "int", "java.lang.Integer": "int", "java.lang.Long": "int",
    "boolean": "bool", "java.lang.Boolean": "bool",
    "java.lang.String": "str",
    "org.apache.spark.sql.types.DataType": "spark_type",
}
JAVA_LISTS = {"java.util.List"}
SPEC_PACKAGE = "io.planengine.jvm.spec."


def shape_of_java(t: Mapping[str, Any]) -> str:
    """A component type as ``SpecRecords`` lists it, in the common vocabulary."""
    if "array" in t:
        shape = f"list[{shape_of_java(t['array'])}]"
    elif t["class"] in JAVA_LISTS:
        shape = f"list[{shape_of_java(t['args'][0])}]"
    elif t["class"] in JAVA_SCALARS:
        shape = JAVA_SCALARS[t["class"]]
    elif t["class"].startswith(SPEC_PACKAGE):
        shape = t["class"][len(SPEC_PACKAGE):]
    else:
        shape = f"unmapped Java type {t['class']}"
    if t.get("nullable"):
        if t.get("class") in ("int", "long", "boolean"):
            return f"unmapped Java type @Nullable {t['class']} (a primitive is never null)"
        return f"optional[{shape}]"
    return shape


def shape_of_python(t: Any) -> str:
    """A dataclass field's (resolved) annotation, in the common vocabulary."""
    if t is SparkType:
        return "spark_type"
    origin = typing.get_origin(t)
    arguments = typing.get_args(t)
    if origin in (types.UnionType, typing.Union):
        rest = [a for a in arguments if a is not type(None)]
        if len(rest) == 1 and len(arguments) == 2:
            return f"optional[{shape_of_python(rest[0])}]"
    if origin is tuple and len(arguments) == 2 and arguments[1] is Ellipsis:
        return f"list[{shape_of_python(arguments[0])}]"
    if t in (int, bool, str):
        return t.__name__
    if isinstance(t, type) and issubclass(t, JvmSpec):
        return t.__name__
    return f"unmapped Python type {t!r}"


def python_fields(spec: type[JvmSpec]) -> dict[str, str]:
    """The JSON keys of ``spec`` (its fields in camelCase) with their shapes."""
    hints = typing.get_type_hints(spec)
    return {camel(f.name): shape_of_python(hints[f.name]) for f in dataclasses.fields(spec)}


def java_fields(components: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    return {name: shape_of_java(t) for name, t in components.items()}


def mismatches(java: Mapping[str, Mapping[str, Mapping[str, Any]]],
               specs: Sequence[type[JvmSpec]]) -> dict[str, list[str]]:
    """Per spec name (record or dataclass), what differs between the two sides; a name whose pair agrees maps
    to an empty list. ``java``: ``SpecRecords``' listing."""
    out: dict[str, list[str]] = {}
    by_name = {spec.__name__: spec for spec in specs}
    for name in sorted(set(java) | set(by_name)):
        if name not in by_name:
            out[name] = [f"the record io.planengine.jvm.spec.{name} has no dataclass in planengine/runtime/jvm/specs.py"
                         " (SPECS)"]
            continue
        if name not in java:
            out[name] = [f"the dataclass specs.{name} has no record io.planengine.jvm.spec.{name}"]
            continue
        mine, theirs = python_fields(by_name[name]), java_fields(java[name])
        problems = []
        for key in sorted(set(mine) | set(theirs)):
            if key not in theirs:
                problems.append(f"field {key} is in the dataclass only")
            elif key not in mine:
                problems.append(f"component {key} is in the record only")
            elif mine[key] != theirs[key]:
                problems.append(f"{key} is {mine[key]} in Python but {theirs[key]} in Java")
        out[name] = problems
    return out
