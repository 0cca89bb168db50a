"""Factories: how a ``WITH ('connector' = '…', …)`` map becomes a source, sink or format.

A factory declares its options (``required_options`` / ``optional_options``) as typed ``ConfigOption``s,
and which of them may change between compiling a plan and restoring it without changing the topology
(``mutable_options``; DESIGN §3 ``table.plan.restore.enrich-table-options``). Factories are found through
the ``planengine.factories`` entry-point group (``planengine.connectors.discovery``).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from planengine.catalog.objects import CatalogTable, ObjectIdentifier
from planengine.catalog.secret_options import has_reference, resolve_value
from planengine.connectors.base import DecodingFormat, DynamicTableSink, DynamicTableSource, EncodingFormat
from planengine.connectors.options import ConfigOption
from planengine.errors import OptionError
from planengine.ir.schema import ResolvedSchema


@dataclass(frozen=True)
class FactoryContext:
    """Everything a factory may look at: the table, its identifier, and the session configuration.

    ``options`` are the table's options with ``${env:NAME}`` references resolved from the process
    environment (the table, and so a compiled plan, keeps the reference, never the value). At run time
    (``require_environment``) an unset variable is an error naming it; while planning it stays as written, so
    a plan can be compiled where the secret is not available.
    """

    identifier: ObjectIdentifier
    table: CatalogTable
    config: Mapping[str, str] = field(default_factory=dict)
    is_temporary: bool = False
    require_environment: bool = False

    @property
    def options(self) -> dict[str, str]:
        return {key: self._resolve(key, value) for key, value in self.table.options_dict.items()}

    def _resolve(self, key: str, value: str) -> str:
        def missing(variable: str) -> None:
            if self.require_environment:
                raise OptionError(
                    f"table {self.identifier}: option '{key}' reads the environment variable {variable}, which is "
                    "not set", hint=f"set {variable} in the environment of the engine (on Kubernetes, from a "
                                    "Secret through the pod template)")

        return resolve_value(value, os.environ, on_missing=missing) if has_reference(value) else value

    @property
    def schema(self) -> ResolvedSchema:
        return self.table.schema


class Factory(ABC):
    """Base of connector and format factories."""

    factory_identifier: ClassVar[str]
    #: For docs/connectors.md: one line, and how the connector's changelog behaves.
    description: ClassVar[str] = ""
    changelog_doc: ClassVar[str] = ""
    #: For docs/connectors.md: the classes it creates, whose ability mix-ins are listed.
    source_class: ClassVar[type | None] = None
    sink_class: ClassVar[type | None] = None

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return ()

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return ()

    def mutable_options(self) -> frozenset[str]:
        """Keys that may differ between plan and catalog at restore; ``'x.*'`` covers a whole namespace."""
        return frozenset()

    def documented_pattern_options(self) -> Sequence[ConfigOption[Any]]:
        """Options whose keys depend on the table or pass through (``fields.<column>.kind``,
        ``properties.*``), described once for the docs; validation derives the real ones."""
        return ()


def is_mutable_option(factory: Factory, key: str) -> bool:
    """Whether ``key`` may change between compile and restore without a topology change."""
    for pattern in factory.mutable_options():
        if pattern == key or (pattern.endswith("*") and key.startswith(pattern[:-1])):
            return True
    return False


class DynamicTableSourceFactory(Factory):
    @abstractmethod
    def create_dynamic_table_source(self, ctx: FactoryContext) -> DynamicTableSource: ...


class DynamicTableSinkFactory(Factory):
    @abstractmethod
    def create_dynamic_table_sink(self, ctx: FactoryContext) -> DynamicTableSink: ...


class FormatFactory(Factory):
    """A format's options are declared unprefixed (``ignore-parse-errors``) and used under its identifier
    (``json.ignore-parse-errors``, or ``key.json.…`` / ``value.json.…`` for Kafka key/value formats)."""


class DecodingFormatFactory(FormatFactory):
    @abstractmethod
    def create_decoding_format(self, ctx: FactoryContext, options: Mapping[str, Any]) -> DecodingFormat:
        """``options``: this format's typed values, unprefixed, defaults filled in."""


class EncodingFormatFactory(FormatFactory):
    @abstractmethod
    def create_encoding_format(self, ctx: FactoryContext, options: Mapping[str, Any]) -> EncodingFormat: ...
