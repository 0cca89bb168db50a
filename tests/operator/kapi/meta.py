"""The checks the API server makes on every object that are cheap to make here.

ObjectMeta (names, label keys and values, annotation size) for every kind, and for the built-in kinds the
operator writes (Pod, Service, ConfigMap, Lease, Event, ...) their OpenAPI schema through
``kubernetes-validate`` (Kubernetes 1.35, offline), so a manifest a real cluster would refuse is refused
here too. Messages follow apimachinery's validation helpers.
"""

from __future__ import annotations

import json
import re
from typing import Any

import kubernetes_validate

from tests.operator.kapi.errors import FieldError

KUBERNETES_VERSION = "1.35"
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = rf"({_QUALIFIED_NAME})?"
SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                     "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                     r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MESSAGE = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                   "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                   "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
# kind -> how its name is checked (apimachinery's ValidateObjectMeta name functions)
NAME_RULES = {"Namespace": "label", "Service": "dns1035"}
# Built-in kinds whose body is checked against the Kubernetes OpenAPI schema.
SCHEMA_CHECKED = {"Pod", "Service", "ConfigMap", "Secret", "Lease", "Event", "PersistentVolumeClaim"}
CONFIGMAP_MAX_BYTES = 1024 * 1024
ANNOTATIONS_MAX_BYTES = 256 * 1024


def name_errors(kind: str, name: str, field: str = "metadata.name") -> list[FieldError]:
    rule = NAME_RULES.get(kind, "subdomain")
    if rule == "label":
        ok, limit, message = re.fullmatch(_DNS1123_LABEL, name), 63, LABEL_MESSAGE
    elif rule == "dns1035":
        ok, limit, message = re.fullmatch(_DNS1035_LABEL, name), 63, DNS1035_MESSAGE
    else:
        ok, limit, message = re.fullmatch(_DNS1123_SUBDOMAIN, name), 253, SUBDOMAIN_MESSAGE
    errors = []
    if len(name) > limit:
        errors.append(FieldError("Invalid", field, f"must be no more than {limit} characters", name))
    if not ok:
        errors.append(FieldError("Invalid", field, message, name))
    return errors


def _qualified_name_errors(key: str, field: str) -> list[FieldError]:
    prefix, _, name = key.rpartition("/")
    errors = []
    if prefix and (len(prefix) > 253 or not re.fullmatch(_DNS1123_SUBDOMAIN, prefix)):
        errors.append(FieldError("Invalid", field, "prefix part " + SUBDOMAIN_MESSAGE, key))
    if not name or len(name) > 63 or not re.fullmatch(_QUALIFIED_NAME, name):
        errors.append(FieldError("Invalid", field, "name part must consist of alphanumeric characters, '-', '_' or "
                                                   "'.', and must start and end with an alphanumeric character, and "
                                                   "be no more than 63 characters", key))
    return errors


def metadata_errors(kind: str, metadata: dict[str, Any]) -> list[FieldError]:
    errors = name_errors(kind, str(metadata.get("name") or ""))
    for key, value in (metadata.get("labels") or {}).items():
        errors += _qualified_name_errors(key, "metadata.labels")
        if not isinstance(value, str) or len(value) > 63 or not re.fullmatch(_LABEL_VALUE, value):
            errors.append(FieldError("Invalid", "metadata.labels", "a valid label must be an empty string or "
                                     "consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                                     "with an alphanumeric character, and be no more than 63 characters", value))
    annotations = metadata.get("annotations") or {}
    for key in annotations:
        errors += _qualified_name_errors(key, "metadata.annotations")
    size = sum(len(k) + len(str(v)) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        errors.append(FieldError("TooLong", "metadata.annotations", f"may not be more than {ANNOTATIONS_MAX_BYTES} "
                                                                     "bytes", size))
    return errors


def builtin_errors(kind: str, obj: dict[str, Any]) -> list[FieldError]:
    """The built-in kind's OpenAPI schema (first error, as kubernetes-validate reports it) and size limits."""
    errors: list[FieldError] = []
    if kind == "ConfigMap":
        size = sum(len(k) + len(str(v)) for part in ("data", "binaryData") for k, v in (obj.get(part) or {}).items())
        if size > CONFIGMAP_MAX_BYTES:
            errors.append(FieldError("TooLong", "", f"may not be more than {CONFIGMAP_MAX_BYTES} bytes", size))
    if kind not in SCHEMA_CHECKED:
        return errors
    try:
        kubernetes_validate.validate(json.loads(json.dumps(obj)), KUBERNETES_VERSION, strict=False)
    except kubernetes_validate.ValidationError as exc:
        cause = exc.caused_by if hasattr(exc, "caused_by") else exc
        path = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in getattr(cause, "path", []))
        path = path.replace(".[", "[")
        if getattr(cause, "validator", "") == "required":
            missing = re.search(r"'([^']+)' is a required property", cause.message)
            field = f"{path}.{missing.group(1)}" if missing and path else (missing.group(1) if missing else path)
            errors.append(FieldError("Required", field))
        else:
            errors.append(FieldError("Invalid", path, cause.message, getattr(cause, "instance", None)))
    return errors


def unknown_builtin_fields(kind: str, obj: dict[str, Any]) -> list[str]:
    """Paths of fields the built-in kind does not declare (the API server drops them while decoding)."""
    if kind not in SCHEMA_CHECKED:
        return []
    try:
        kubernetes_validate.validate(json.loads(json.dumps(obj)), KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        cause = exc.caused_by if hasattr(exc, "caused_by") else exc
        extra = re.search(r"\('([^']+)' was unexpected\)|\('([^']+)', .* were unexpected\)", cause.message)
        if getattr(cause, "validator", "") == "additionalProperties" and extra:
            path = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in cause.path).replace(".[", "[")
            name = extra.group(1) or extra.group(2)
            return [f"{path}.{name}" if path else name]
    return []
