"""The checks the API server makes on every object that are cheap to make here.

ObjectMeta (names, label keys and values, annotation size) for every kind, and for the built-in kinds the
operator writes (Pod, Service, ConfigMap, Lease, Event, ...) their OpenAPI schema through
``kubernetes-validate`` (Kubernetes 1.35, offline), so a manifest a real cluster would refuse is refused
here too. Messages follow apimachinery's validation helpers.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

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


@functools.lru_cache(maxsize=64)
def _validator(kind: str, api_version: str, strict: bool) -> Any:
    """kubernetes-validate's schema for a kind, compiled once (its ``validate`` reloads the JSON files on
    every call, a quarter of a second per Event)."""
    versions = [v for v in kv_utils.all_versions()
                if kv_utils.major_minor(v) <= kv_utils.major_minor(KUBERNETES_VERSION)]
    schema_dir = f"v{versions[-1]}-local" + ("-strict" if strict else "")
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group_version}.json",
                                          KUBERNETES_VERSION)
    except FileNotFoundError:
        return None
    definitions = kv_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json",
                                           KUBERNETES_VERSION)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def _first_error(kind: str, obj: dict[str, Any], strict: bool) -> Any:
    validator = _validator(kind, str(obj.get("apiVersion") or "v1"), strict)
    if validator is None:
        return None
    return jsonschema.exceptions.best_match(validator.iter_errors(json.loads(json.dumps(obj))))


def _path(error: Any) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in error.path).replace(".[", "[")


def builtin_errors(kind: str, obj: dict[str, Any]) -> list[FieldError]:
    """The built-in kind's OpenAPI schema (its most relevant error) and size limits."""
    errors: list[FieldError] = []
    if kind == "ConfigMap":
        size = sum(len(k) + len(str(v)) for part in ("data", "binaryData") for k, v in (obj.get(part) or {}).items())
        if size > CONFIGMAP_MAX_BYTES:
            errors.append(FieldError("TooLong", "", f"may not be more than {CONFIGMAP_MAX_BYTES} bytes", size))
    if kind not in SCHEMA_CHECKED:
        return errors
    cause = _first_error(kind, obj, strict=False)
    if cause is None:
        return errors
    path = _path(cause)
    if cause.validator == "required":
        missing = re.search(r"'([^']+)' is a required property", cause.message)
        name = missing.group(1) if missing else ""
        errors.append(FieldError("Required", f"{path}.{name}" if path and name else (name or path)))
    else:
        errors.append(FieldError("Invalid", path, cause.message, cause.instance))
    return errors


def unknown_builtin_fields(kind: str, obj: dict[str, Any]) -> list[str]:
    """Paths of fields the built-in kind does not declare (the API server drops them while decoding)."""
    if kind not in SCHEMA_CHECKED:
        return []
    validator = _validator(kind, str(obj.get("apiVersion") or "v1"), True)
    if validator is None:
        return []
    found = []
    for error in validator.iter_errors(json.loads(json.dumps(obj))):
        extra = re.search(r"\(([^()]*) (?:was|were) unexpected\)", error.message)
        if error.validator == "additionalProperties" and extra:
            path = _path(error)
            for name in re.findall(r"'([^']+)'", extra.group(1)):
                found.append(f"{path}.{name}" if path else name)
    return found
