"""Find connector and format factories through the ``planengine.factories`` entry-point group.

Entry points are listed once (cached) and loaded lazily, so a broken or half-installed third-party plugin
only matters when a table actually uses it, and then the error says which package to install. Errors for
unknown identifiers list what *is* available and suggest the closest name.
"""

from __future__ import annotations

import difflib
import functools
from importlib.metadata import EntryPoint, entry_points
from typing import TypeVar

from planengine.connectors.base import DynamicTableSink, DynamicTableSource
from planengine.connectors.factories import (
    DecodingFormatFactory,
    DynamicTableSinkFactory,
    DynamicTableSourceFactory,
    Factory,
    FactoryContext,
    FormatFactory,
)
from planengine.errors import OptionError, ValidationError

GROUP = "planengine.factories"
F = TypeVar("F", bound=Factory)

#: Which extra of the planengine distribution brings a module that a factory may import.
_EXTRAS_FOR_MODULE = {"psycopg": "spark", "pyspark": "spark", "pyarrow": "spark", "pandas": "spark"}

_registered: dict[str, Factory] = {}


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name)}


@functools.cache
def _load(name: str) -> Factory:
    ep = _entry_points()[name]
    try:
        cls = ep.load()
    except ModuleNotFoundError as e:
        module = (e.name or "").split(".")[0]
        extra = _EXTRAS_FOR_MODULE.get(module)
        install = f"pip install 'planengine[{extra}]'" if extra else f"pip install {module}"
        raise ValidationError(
            f"factory '{name}' ({ep.value}) cannot be loaded: the Python package '{module}' is not installed",
            hint=f"install it ({install}) in the environment that runs planengine",
        ) from e
    except ImportError as e:
        raise ValidationError(f"factory '{name}' ({ep.value}) cannot be loaded: {e}",
                              hint="check that the plug-in providing it is installed correctly") from e
    factory = cls()
    if not isinstance(factory, Factory) or getattr(factory, "factory_identifier", None) != name:
        raise ValidationError(
            f"entry point '{name}' in group {GROUP} points to {ep.value}, which is not a factory with "
            f"factory_identifier = '{name}'",
            hint="fix the plug-in's entry-point declaration",
        )
    return factory


def register_factory(factory: Factory) -> None:
    """Make a factory available in this process without an entry point (tests, embedded plug-ins)."""
    _registered[factory.factory_identifier] = factory


def unregister_factory(identifier: str) -> None:
    _registered.pop(identifier, None)


def clear_cache() -> None:
    """Forget listed and loaded entry points (after installing a plug-in at runtime; tests)."""
    _entry_points.cache_clear()
    _load.cache_clear()


def load_factory(identifier: str) -> Factory | None:
    """The factory registered under ``identifier``, or None if there is none."""
    if identifier in _registered:
        return _registered[identifier]
    if identifier in _entry_points():
        return _load(identifier)
    return None


def available_factories(kind: type[F] = Factory, *, include_registered: bool = True  # type: ignore[assignment]
                        ) -> dict[str, F]:
    """All loadable factories of ``kind`` by identifier (plug-ins that fail to load are left out)."""
    found: dict[str, F] = {}
    names = {*_entry_points(), *_registered} if include_registered else set(_entry_points())
    for name in sorted(names):
        try:
            factory = load_factory(name)
        except ValidationError:
            continue
        if isinstance(factory, kind):
            found[name] = factory
    return found


def _connector_kinds() -> tuple[type[Factory], ...]:
    return (DynamicTableSourceFactory, DynamicTableSinkFactory)


def _unknown(what: str, name: str, available: list[str], fix: str, table: object | None = None) -> OptionError:
    close = difflib.get_close_matches(name, available, n=1, cutoff=0.5)
    suggestion = f"; did you mean '{close[0]}'?" if close else ""
    where = f"table {table}: " if table is not None else ""
    return OptionError(f"{where}no {what} '{name}'{suggestion}",
                       hint=f"{fix}; available: {', '.join(available) or '(none)'}")


def available_connectors() -> list[str]:
    return sorted(n for n, f in available_factories().items() if isinstance(f, _connector_kinds()))


def available_formats() -> list[str]:
    return sorted(available_factories(FormatFactory))


def find_table_factory(identifier: str, kind: type[F] | None = None, *, table: object | None = None) -> F:
    """The connector factory for ``'connector' = identifier``; ``kind`` narrows to sources or sinks.

    ``table`` (an identifier) is only used to say where the bad option is.
    """
    factory = load_factory(identifier)
    if factory is None or not isinstance(factory, _connector_kinds()):
        raise _unknown("connector", identifier, available_connectors(),
                       "set 'connector' to an installed connector", table)
    if kind is not None and not isinstance(factory, kind):
        role = "read from (it is a sink-only connector)" if kind is DynamicTableSourceFactory \
            else "written to (it is a source-only connector)"
        names = sorted(n for n, f in available_factories(kind).items())
        where = f"table {table}: " if table is not None else ""
        raise OptionError(f"{where}connector '{identifier}' cannot be {role}",
                          hint=f"connectors that can: {', '.join(names)}")
    return factory  # type: ignore[return-value]


def find_format_factory(name: str, kind: type[F] | None = None, *, table: object | None = None) -> F:
    factory = load_factory(name)
    if factory is None or not isinstance(factory, FormatFactory):
        raise _unknown("format", name, available_formats(), "set the format option to an installed format", table)
    if kind is not None and not isinstance(factory, kind):
        direction = "reading (decoding)" if kind is DecodingFormatFactory else "writing (encoding)"
        where = f"table {table}: " if table is not None else ""
        raise OptionError(f"{where}format '{name}' does not support {direction}")
    return factory  # type: ignore[return-value]


def _connector_of(ctx: FactoryContext) -> str:
    connector = ctx.options.get("connector")
    if not connector:
        raise OptionError(
            f"table {ctx.identifier} has no 'connector' option",
            hint=f"add 'connector' = '…' to its WITH clause; available: {', '.join(available_connectors())}",
        )
    return connector


def create_table_source(ctx: FactoryContext) -> DynamicTableSource:
    """The source for a catalog table, from its ``'connector'`` option (options validated, all at once)."""
    factory = find_table_factory(_connector_of(ctx), DynamicTableSourceFactory, table=ctx.identifier)
    return factory.create_dynamic_table_source(ctx)


def create_table_sink(ctx: FactoryContext) -> DynamicTableSink:
    factory = find_table_factory(_connector_of(ctx), DynamicTableSinkFactory, table=ctx.identifier)
    return factory.create_dynamic_table_sink(ctx)
