"""``x-kubernetes-validations`` rules evaluated with cel-python, with Kubernetes' rule semantics.

A rule sees its node as ``self``; a *transition rule* (one that mentions ``oldSelf``) runs only on an update
whose old object has a value at the same path, with that value as ``oldSelf``. A failed rule reports
``<path>: Invalid value: "<schema type>": <message>`` (``message``, or ``messageExpression``'s result, else
``failed rule: <rule>``), at ``fieldPath`` below the node when given, with ``reason`` as the error type.
Programs are compiled once per rule text.
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any

import celpy
from celpy import celtypes

from tests.operator.kapi.errors import FieldError

_ENV = celpy.Environment()
_REASONS = {"FieldValueInvalid": "Invalid", "FieldValueForbidden": "Forbidden",
            "FieldValueRequired": "Required", "FieldValueDuplicate": "Duplicate"}


def is_transition_rule(rule: str) -> bool:
    return re.search(r"\boldSelf\b", rule) is not None


@functools.lru_cache(maxsize=512)
def _program(text: str) -> Any:
    return _ENV.program(_ENV.compile(text))


def compile_error(rule: dict[str, Any]) -> str | None:
    """Why the rule (or its messageExpression) does not compile, or None."""
    for text in (rule.get("rule"), rule.get("messageExpression")):
        if text is None:
            continue
        try:
            _program(text)
        except Exception as exc:  # cel-python raises parser-specific errors
            return str(exc).strip().splitlines()[0]
    return None if rule.get("rule") else "rule is required"


def _evaluate(text: str, activation: dict[str, Any]) -> Any:
    result = _program(text).evaluate(activation)
    if isinstance(result, Exception):  # cel-python hands some evaluation errors back as values
        raise result
    return result


def check(rule: dict[str, Any], value: Any, path: str, type_name: str, *, old: Any = None,
          has_old: bool = False) -> FieldError | None:
    """The error of one rule on one node, or None (passed, or a transition rule without an old value)."""
    text = rule["rule"]
    activation = {"self": celpy.json_to_cel(value)}
    if is_transition_rule(text):
        if not has_old:
            return None
        activation["oldSelf"] = celpy.json_to_cel(old)
    field = path
    if rule.get("fieldPath"):
        below = rule["fieldPath"].lstrip(".")
        field = f"{path}.{below}" if path else below
    kind = _REASONS.get(rule.get("reason", "FieldValueInvalid"), "Invalid")
    try:
        passed = _evaluate(text, activation)
    except Exception as exc:  # an evaluation error fails the rule, as in the API server
        return FieldError("Invalid", field, f"rule evaluation error: {str(exc).splitlines()[0]}", type_name)
    if isinstance(passed, celtypes.BoolType) and bool(passed):
        return None
    message = rule.get("message") or f"failed rule: {text}"
    if rule.get("messageExpression"):
        with contextlib.suppress(Exception):  # the static message stands in, as in the API server
            message = str(_evaluate(rule["messageExpression"], activation))
    if kind in ("Required", "Forbidden"):
        return FieldError(kind, field, message)
    return FieldError(kind, field, message, type_name)
