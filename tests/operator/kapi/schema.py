"""A CRD's structural schema applied as the API server applies it: prune, default, validate, CEL.

Order per write (apiextensions-apiserver): unknown fields and non-nullable ``null`` values are pruned while
decoding (``fieldValidation=Strict`` turns an unknown field into a 400 instead; the default, ``Warn``,
answers a ``Warning`` header), defaults fill absent fields, then the openAPIV3Schema is validated (types,
formats, enums, required, patterns, lengths, bounds, list types) and, unless a type error blocks them,
the ``x-kubernetes-validations`` CEL rules run, transition rules (``oldSelf``) only on an update where the
old object has a value at the rule's path. Validation ratchets like Kubernetes 1.33+: on an update, a
subtree equal to the old object's is not validated again, so an object that became invalid under a newer
schema can still get its metadata and status written.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import ipaddress
import re
import uuid
from datetime import date, datetime
from typing import Any

from tests.operator.kapi import cel
from tests.operator.kapi.errors import FieldError

MISSING: Any = dataclasses.make_dataclass("Missing", [])()  # "no old value here" (distinct from null)
_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# ------------------------------------------------------------------------------------------ pruning
def prune(obj: Any, schema: dict[str, Any], path: str = "", *, root: bool = False) -> list[str]:
    """Drop what the schema does not declare (in place); returns the dropped fields' paths."""
    dropped: list[str] = []
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        for key in list(obj):
            value = obj[key]
            if (root or embedded) and key in _ROOT_KEEP:
                continue  # type metadata and ObjectMeta are not the schema's to prune
            sub = (props or {}).get(key)
            if sub is None and isinstance(extra, dict):
                sub = extra
            if sub is None:
                if not preserve:
                    del obj[key]
                    dropped.append(child(path, key))
                continue
            if value is None and not sub.get("nullable"):
                del obj[key]  # nulls of non-nullable fields are pruned before defaulting
                continue
            dropped += prune(value, sub, child(path, key))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(obj):
            dropped += prune(item, schema["items"], f"{path}[{index}]")
    return dropped


# ------------------------------------------------------------------------------------------ defaulting
def apply_defaults(obj: Any, schema: dict[str, Any]) -> None:
    """Fill absent fields with their schema default (in place), then default inside what is there."""
    if isinstance(obj, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in obj and "default" in sub:
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                apply_defaults(obj[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in obj.items():
                if key not in (schema.get("properties") or {}):
                    apply_defaults(value, extra)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            apply_defaults(item, schema["items"])


# ------------------------------------------------------------------------------------------ validation
_FORMATS = {
    "date-time": lambda v: bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})",
                                             v)) and _parses(lambda: datetime.fromisoformat(v.replace("Z", "+00:00"))),
    "date": lambda v: _parses(lambda: date.fromisoformat(v)) and len(v) == 10,
    "byte": lambda v: _parses(lambda: base64.b64decode(v, validate=True)),
    "uuid": lambda v: _parses(lambda: uuid.UUID(v)),
    "ipv4": lambda v: _parses(lambda: ipaddress.IPv4Address(v)),
    "ipv6": lambda v: _parses(lambda: ipaddress.IPv6Address(v)),
    "cidr": lambda v: _parses(lambda: ipaddress.ip_network(v, strict=False)) and "/" in v,
    "hostname": lambda v: len(v) <= 255 and all(
        re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?", part) for part in v.split(".")),
    "duration": lambda v: bool(re.fullmatch(r"(-?\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+|0", v)),
    "email": lambda v: bool(re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", v)),
}
_FORMAT_TYPE_NAMES = {"date-time": "date-time", "date": "date", "byte": "byte", "uuid": "uuid", "ipv4": "ipv4",
                      "ipv6": "ipv6", "cidr": "cidr", "hostname": "hostname", "duration": "duration",
                      "email": "email"}


def _parses(fn: Any) -> bool:
    try:
        fn()
    except (ValueError, TypeError):
        return False
    return True


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if type(value) is int and not -2 ** 63 <= value < 2 ** 63:
        value = float(value)  # the API server's JSON decoding: an integer beyond int64 is a float64 ("number")
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    wanted = schema.get("type")
    if wanted is None:
        return True
    if wanted == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return _type_name(value) == wanted


def validate(new: Any, schema: dict[str, Any], path: str = "", old: Any = MISSING) -> list[FieldError]:
    """Every schema and CEL error of ``new`` (``old``: the stored object, for ratcheting and ``oldSelf``)."""
    errors = _validate_schema(new, schema, path, old)
    if any(e.type == "TypeInvalid" for e in errors):
        errors.append(FieldError("Invalid", "", "some validation rules were not checked because the object was "
                                                "invalid; correct the existing errors to complete validation"))
        return errors
    return errors + _validate_rules(new, schema, path, old)


def _validate_schema(value: Any, schema: dict[str, Any], path: str, old: Any) -> list[FieldError]:
    if old is not MISSING and value == old:
        return []  # ratcheting: an unchanged value is not validated again
    if value is None:
        if schema.get("nullable"):
            return []
        return [FieldError("TypeInvalid", path, f"{path} in body must be of type {schema.get('type', 'object')}: "
                                                f'"null"', "null")]
    if not _type_ok(value, schema):
        wanted = "integer or string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
        found = _type_name(value)
        return [FieldError("TypeInvalid", path, f'{path} in body must be of type {wanted}: "{found}"', found)]
    errors: list[FieldError] = []
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in schema["enum"])
        errors.append(FieldError("NotSupported", path, f"supported values: {supported}", value))
    if isinstance(value, str):
        errors += _string(value, schema, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        errors += _number(value, schema, path)
    elif isinstance(value, list):
        errors += _array(value, schema, path, old)
    elif isinstance(value, dict):
        errors += _object(value, schema, path, old)
    return errors


def _string(value: str, schema: dict[str, Any], path: str) -> list[FieldError]:
    errors = []
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(FieldError("TooLong", path, f"may not be more than {schema['maxLength']} bytes", value))
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(FieldError("Invalid", path, f"{path} in body should be at least {schema['minLength']} chars "
                                                  "long", value))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(FieldError("Invalid", path, f"{path} in body should match '{schema['pattern']}'", value))
    check = _FORMATS.get(schema.get("format", ""))
    if check is not None and not check(value):
        shown = _FORMAT_TYPE_NAMES[schema["format"]]
        errors.append(FieldError("Invalid", path, f'{path} in body must be of type {shown}: "{value}"', value))
    return errors


def _number(value: float, schema: dict[str, Any], path: str) -> list[FieldError]:
    errors = []
    if "minimum" in schema:
        exclusive = schema.get("exclusiveMinimum") is True
        if value < schema["minimum"] or (exclusive and value == schema["minimum"]):
            relation = "greater than" if exclusive else "greater than or equal to"
            errors.append(FieldError("Invalid", path, f"{path} in body should be {relation} {schema['minimum']}",
                                     value))
    if "maximum" in schema:
        exclusive = schema.get("exclusiveMaximum") is True
        if value > schema["maximum"] or (exclusive and value == schema["maximum"]):
            relation = "less than" if exclusive else "less than or equal to"
            errors.append(FieldError("Invalid", path, f"{path} in body should be {relation} {schema['maximum']}",
                                     value))
    if "multipleOf" in schema and value % schema["multipleOf"]:
        errors.append(FieldError("Invalid", path, f"{path} in body should be a multiple of {schema['multipleOf']}",
                                 value))
    if schema.get("format") == "int32" and not -(2**31) <= value < 2**31:
        errors.append(FieldError("Invalid", path, f"{path} in body must be of type int32", value))
    return errors


def _list_key(item: Any, keys: list[str]) -> tuple[Any, ...] | None:
    if not isinstance(item, dict):
        return None
    return tuple(item.get(k) for k in keys)


def _correlated_items(value: list[Any], schema: dict[str, Any], old: Any) -> list[Any]:
    """The old item each new item corresponds to (a map list by its keys, a set by value), else MISSING."""
    if not isinstance(old, list):
        return [MISSING] * len(value)
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        keys = list(schema.get("x-kubernetes-list-map-keys") or [])
        by_key = {_list_key(item, keys): item for item in old}
        return [by_key.get(_list_key(item, keys), MISSING) for item in value]
    if kind == "set":
        return [item if item in old else MISSING for item in value]
    return [MISSING] * len(value)


def _array(value: list[Any], schema: dict[str, Any], path: str, old: Any) -> list[FieldError]:
    errors = []
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(FieldError("TooMany", path, f"must have at most {schema['maxItems']} items", len(value)))
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(FieldError("Invalid", path, f"{path} in body should have at least {schema['minItems']} items",
                                 len(value)))
    kind = schema.get("x-kubernetes-list-type")
    if kind in ("map", "set"):
        keys = list(schema.get("x-kubernetes-list-map-keys") or [])
        seen: list[Any] = []
        for index, item in enumerate(value):
            key = _list_key(item, keys) if kind == "map" else item
            if key in seen:
                shown = dict(zip(keys, key, strict=True)) if kind == "map" else item
                errors.append(FieldError("Duplicate", f"{path}[{index}]", "", shown))
            seen.append(key)
    items = schema.get("items")
    if isinstance(items, dict):
        for index, (item, before) in enumerate(zip(value, _correlated_items(value, schema, old), strict=True)):
            errors += _validate_schema(item, items, f"{path}[{index}]", before)
    return errors


def _object(value: dict[str, Any], schema: dict[str, Any], path: str, old: Any) -> list[FieldError]:
    errors = []
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(FieldError("Required", child(path, name)))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(FieldError("TooMany", path, f"must have at most {schema['maxProperties']} items", len(value)))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(FieldError("Invalid", path, f"{path} in body should have at least {schema['minProperties']} "
                                                  "properties", len(value)))
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    before = old if isinstance(old, dict) else {}
    for key, item in value.items():
        if key in props:
            errors += _validate_schema(item, props[key], child(path, key), before.get(key, MISSING))
        elif isinstance(extra, dict):
            errors += _validate_schema(item, extra, f"{path}[{key}]", before.get(key, MISSING))
    return errors


# ------------------------------------------------------------------------------------------ CEL rules
def _validate_rules(value: Any, schema: dict[str, Any], path: str, old: Any) -> list[FieldError]:
    if value is None or (old is not MISSING and value == old):
        return []
    errors = [error for rule in schema.get("x-kubernetes-validations") or []
              if (error := cel.check(rule, value, path, schema.get("type") or "object", old=old,
                                     has_old=old is not MISSING)) is not None]
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if isinstance(value, dict):
        before = old if isinstance(old, dict) else {}
        for key, item in value.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None:
                name = child(path, key) if key in props else f"{path}[{key}]"
                errors += _validate_rules(item, sub, name, before.get(key, MISSING))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, (item, before_item) in enumerate(zip(value, _correlated_items(value, schema, old), strict=True)):
            errors += _validate_rules(item, schema["items"], f"{path}[{index}]", before_item)
    return errors


def compile_rules(schema: dict[str, Any], path: str = "") -> list[FieldError]:
    """Every CEL rule of the schema compiled (as the API server does when a CRD is written)."""
    errors = []
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        problem = cel.compile_error(rule)
        if problem:
            errors.append(FieldError("Invalid", f"{path}.x-kubernetes-validations[{index}].rule",
                                     f"compilation failed: {problem}", rule.get("rule")))
    for key, sub in (schema.get("properties") or {}).items():
        errors += compile_rules(sub, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            errors += compile_rules(schema[key], f"{path}.{key}")
    return errors


# ------------------------------------------------------------------------------------------ the CRD itself
def structural_errors(schema: dict[str, Any], path: str = "", *, root: bool = True) -> list[FieldError]:
    """What the API server refuses in a CRD's schema: non-structural nodes and defaults the schema rejects.

    Every node needs a ``type`` (unless ``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields``
    stand in), ``properties`` and ``additionalProperties`` exclude each other, ``metadata`` may only constrain
    ``name``/``generateName``, and a ``default`` must survive pruning and validate against its own node.
    """
    errors: list[FieldError] = []
    kind = schema.get("type")
    if not kind and not schema.get("x-kubernetes-int-or-string") and not schema.get(
            "x-kubernetes-preserve-unknown-fields"):
        errors.append(FieldError("Required", f"{path}.type", "must not be empty for specified object fields"))
    if "properties" in schema and "additionalProperties" in schema:
        errors.append(FieldError("Forbidden", f"{path}.additionalProperties",
                                 "additionalProperties and properties are mutual exclusive"))
    if "default" in schema:
        value = copy.deepcopy(schema["default"])
        if prune(value, schema, f"{path}.default") or validate(value, schema, f"{path}.default"):
            errors.append(FieldError("Invalid", f"{path}.default", "must result in valid values for the field",
                                     schema["default"]))
    for key, sub in (schema.get("properties") or {}).items():
        if root and key == "metadata" and set(sub.get("properties") or {}) - {"name", "generateName"}:
            errors.append(FieldError("Forbidden", f"{path}.properties[metadata]",
                                     "must not specify anything other than name and generateName"))
        errors += structural_errors(sub, f"{path}.properties[{key}]", root=False)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            errors += structural_errors(schema[key], f"{path}.{key}", root=False)
    return errors
