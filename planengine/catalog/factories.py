"""``CREATE CATALOG c WITH ('type' = …)``: catalog types by name, with their options checked up front.

One small registry instead of an isinstance chain, so a new catalog type is one entry; all problems with
the options (unknown key, missing key, bad value) are reported in one error, as connector options are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from planengine.catalog import messages
from planengine.catalog.base import Catalog
from planengine.catalog.file_catalog import FileCatalog
from planengine.catalog.memory import InMemoryCatalog
from planengine.errors import CatalogError

# Flink's GenericInMemoryCatalogFactory default; only the built-in default_catalog uses default_database.
DEFAULT_DATABASE_OPTION_DEFAULT = "default"


@dataclass(frozen=True)
class CatalogType:
    required: tuple[str, ...]
    optional: tuple[str, ...]
    build: Callable[[str, Mapping[str, str]], Catalog]


def _parse_bool(value: str) -> bool:
    return value.strip().lower() == "true"


def _memory(name: str, options: Mapping[str, str]) -> Catalog:
    return InMemoryCatalog(name, options.get("default-database", DEFAULT_DATABASE_OPTION_DEFAULT))


def _file(name: str, options: Mapping[str, str]) -> Catalog:
    return FileCatalog(
        options["path"],
        name=name,
        default_database=options.get("default-database", DEFAULT_DATABASE_OPTION_DEFAULT),
        read_only=_parse_bool(options.get("read-only", "false")),
    )


CATALOG_TYPES: dict[str, CatalogType] = {
    "memory": CatalogType(required=(), optional=("default-database",), build=_memory),
    "generic_in_memory": CatalogType(required=(), optional=("default-database",), build=_memory),  # Flink's name
    "file": CatalogType(required=("path",), optional=("default-database", "read-only"), build=_file),
}
_BOOLEAN_OPTIONS = ("read-only",)


def create_catalog(name: str, options: Mapping[str, str]) -> Catalog:
    """Build the catalog ``options['type']`` names; every option problem is reported in one error."""
    if "type" not in options:
        raise CatalogError(
            f"catalog `{name}` has no 'type' option",
            hint=f"add 'type' = '…'; available types: {', '.join(repr(t) for t in sorted(CATALOG_TYPES))}",
        )
    type_name = options["type"]
    catalog_type = CATALOG_TYPES.get(type_name.lower())
    if catalog_type is None:
        guess = messages.suggestion(type_name, CATALOG_TYPES)
        extra = f"; did you mean '{guess}'?" if guess else ""
        raise CatalogError(
            f"unknown catalog type '{type_name}' for catalog `{name}`{extra}",
            hint=f"available types: {', '.join(repr(t) for t in sorted(CATALOG_TYPES))}",
        )
    problems: list[str] = []
    allowed = ("type", *catalog_type.required, *catalog_type.optional)
    for key in sorted(options):
        if key not in allowed:
            guess = messages.suggestion(key, allowed)
            problems.append(f"unknown option '{key}'" + (f" (did you mean '{guess}'?)" if guess else ""))
    for key in catalog_type.required:
        if not options.get(key):
            problems.append(f"missing required option '{key}'")
    for key in _BOOLEAN_OPTIONS:
        if key in options and options[key].strip().lower() not in ("true", "false"):
            problems.append(f"option '{key}' must be 'true' or 'false', not '{options[key]}'")
    if problems:
        raise CatalogError(
            f"invalid options for catalog `{name}` of type '{type_name}': " + "; ".join(problems),
            hint=f"options of type '{type_name}': {', '.join(repr(k) for k in allowed)}",
        )
    return catalog_type.build(name, options)
