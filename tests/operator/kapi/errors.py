"""API errors shaped like the API server's, so kopf, the operator and ``kubectl`` read them as they would.

A field error renders as apimachinery's ``field.Error`` does (``<path>: <type>: <value>: <detail>``), and
a list of them becomes a 422 ``Invalid`` Status with ``details.causes[].field`` paths; kubectl prints
``The SparkPlanJob "j" is invalid: <field>: <message>`` from it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from aiohttp import web

# field.ErrorType -> (Status cause reason, text that starts the message)
ERROR_TYPES = {
    "Required": ("FieldValueRequired", "Required value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
}
_NO_VALUE = object()


def render_value(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: strings quoted, numbers bare, the rest as JSON."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclasses.dataclass(frozen=True)
class FieldError:
    """One invalid field: its path (``spec.driver.cores``), the error type and a detail."""

    type: str
    field: str
    detail: str = ""
    value: Any = _NO_VALUE

    @property
    def reason(self) -> str:
        return ERROR_TYPES[self.type][0]

    @property
    def body(self) -> str:
        text = ERROR_TYPES[self.type][1]
        if self.value is not _NO_VALUE and self.type not in ("Required", "Forbidden", "TooLong"):
            text += f": {render_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body}" if self.field else self.body

    def cause(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.body, "field": self.field}


class ApiError(Exception):
    """An HTTP error answered as a ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            body["details"] = self.details
        return body

    def response(self) -> web.Response:
        return web.json_response(self.status(), status=self.code)


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 Invalid, as ``apierrors.NewInvalid`` builds it (one error bare, several in brackets)."""
    qualified = f"{kind}.{group}" if group else kind
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {listed}', {
        "name": name, "group": group, "kind": kind, "causes": [e.cause() for e in errors]})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)
