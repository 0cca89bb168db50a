"""Flink's own option keys, read from ``flink_options.json`` (generated from Flink's ``ConfigOption`` classes by
the developer tool in ``planengine/config/flink-options-tool``), with each Flink type turned into the parser
that validates a value the way Flink would.

The file is data, not code, so a Flink bump is a regenerated file and a reviewable diff; what planengine *does*
with each key lives in ``planengine.config.flink``.

>>> spec = next(s for s in flink_option_specs() if s.key == "table.exec.mini-batch.enabled")
>>> spec.type.name, spec.default
('Boolean', 'false')
>>> flink_type("List<String>", ()).parse("a;b"), flink_type("List<String>", ()).parse("[a, b]")
(['a', 'b'], ['a', 'b'])
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from planengine.config.values import BOOL, DURATION, FLOAT, INT, MEMORY, STRING, OptionType, enum_type

_SCALARS: dict[str, OptionType[Any]] = {
    "Boolean": BOOL, "Integer": INT, "Long": OptionType("Long", INT.parse), "Double": FLOAT,
    "Float": OptionType("Float", FLOAT.parse), "String": STRING, "Duration": DURATION, "MemorySize": MEMORY,
}


@dataclass(frozen=True)
class FlinkOptionSpec:
    """One key as Flink declares it (``holder`` is the Flink field, for whoever reviews the table)."""

    key: str
    type: OptionType[Any]
    default: str | None
    description: str
    deprecated_keys: tuple[str, ...]
    fallback_keys: tuple[str, ...]
    holder: str


def _list_items(text: str) -> list[str]:
    """Flink writes lists as ``a;b`` (legacy) or in YAML flow style ``[a, b]`` (2.x config files)."""
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        return [part.strip().strip("'\"") for part in stripped[1:-1].split(",") if part.strip()]
    return [part.strip() for part in stripped.split(";") if part.strip()]


def _list_of(element: OptionType[Any]) -> OptionType[list[Any]]:
    def parse(text: str) -> list[Any]:
        try:
            return [element.parse(item) for item in _list_items(text)]
        except ValueError as error:
            raise ValueError(f"a list 'a;b' or '[a, b]' of {error}") from None

    return OptionType(f"List<{element.name}>", parse, element.allowed_values)


def _parse_map(text: str) -> dict[str, str]:
    """Flink maps: ``k1:v1,k2:v2`` or YAML flow style ``{k1: v1, k2: v2}``."""
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        stripped = stripped[1:-1]
    entries = [part.strip() for part in stripped.split(",") if part.strip()]
    if any(":" not in entry for entry in entries):
        raise ValueError("a map such as 'k1:v1,k2:v2'")
    return dict((k.strip(), v.strip()) for k, v in (entry.split(":", 1) for entry in entries))


MAP: OptionType[dict[str, str]] = OptionType("Map", _parse_map)


def flink_type(name: str, values: tuple[str, ...]) -> OptionType[Any]:
    """The parser of a Flink type name as the generator writes it (``Enum`` with ``values``, ``List<…>``)."""
    if name.startswith("List<") and name.endswith(">"):
        return _list_of(flink_type(name[5:-1], values))
    if name == "Enum":
        return OptionType("Enum", enum_type(*values).parse, values)
    if name == "Map":
        return MAP
    if name not in _SCALARS:
        raise ValueError(f"flink_options.json: unknown Flink type {name!r}; teach planengine.config.flink_table it")
    return _SCALARS[name]


@cache
def flink_table() -> dict[str, Any]:
    """The generated file as it is (``flinkVersion``, ``options``)."""
    text = resources.files("planengine.config").joinpath("flink_options.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def flink_version() -> str:
    return str(flink_table()["flinkVersion"])


def flink_option_specs() -> tuple[FlinkOptionSpec, ...]:
    return tuple(
        FlinkOptionSpec(
            key=entry["key"],
            type=flink_type(entry["type"], tuple(entry.get("values", ()))),
            default=entry["default"],
            description=entry["description"],
            deprecated_keys=tuple(entry.get("deprecatedKeys", ())),
            fallback_keys=tuple(entry.get("fallbackKeys", ())),
            holder=entry["holder"],
        )
        for entry in flink_table()["options"])
