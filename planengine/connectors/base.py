"""FLIP-95 interfaces: what the planner asks of a table source, a table sink and a format.

The planner talks to connectors only through these classes: it asks a source for its changelog mode and
abilities (``planengine.connectors.abilities``), records the abilities it applied as specs
(``planengine.exec.specs``), and asks for a *runtime provider*. Providers are the seam between
planning and Spark: they are data (the connector identifier and the planner-side object carrying every typed
option); the Spark runtime reads and writes through the reader/writer registered for
``provider.connector`` (``planengine.runtime.connectors``), never re-parsing option strings.
"""

from __future__ import annotations

import copy as _copy
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planengine.ir.changelog import ChangelogMode


class DynamicTableSource(ABC):
    """A table read by a query. Instances are mutable while the planner applies abilities; hence ``copy``."""

    @abstractmethod
    def as_summary_string(self) -> str:
        """A short, stable description for EXPLAIN and plan ``description`` fields (no secrets)."""

    def copy(self) -> DynamicTableSource:
        """An independent copy, so the optimizer can try an ability without changing the original."""
        return _copy.deepcopy(self)


@dataclass
class ScanRuntimeProvider:
    """How to read a scan source at runtime. ``source`` carries the connector's typed options."""

    connector: str
    source: ScanTableSource
    is_bounded: bool


class ScanTableSource(DynamicTableSource):
    """A source scanned as a whole (bounded) or continuously (unbounded)."""

    @abstractmethod
    def changelog_mode(self) -> ChangelogMode:
        """The row kinds this source produces (after the ``'changelog-mode'`` option, if any)."""

    @abstractmethod
    def scan_runtime_provider(self, ctx: ScanContext) -> ScanRuntimeProvider: ...

    @property
    def requires_normalization(self) -> bool:
        """Whether the planner must put a ChangelogNormalize after the scan (upsert sources, DESIGN §5)."""
        return self.changelog_mode().is_upsert()


@dataclass(frozen=True)
class ScanContext:
    """What the planner hands to ``scan_runtime_provider``; extended as the runtime needs it."""

    node_id: int | None = None


@dataclass(frozen=True)
class LookupContext:
    """Lookup keys as paths into the source's physical row (``((0,), (2,))``: join on fields 0 and 2)."""

    lookup_keys: tuple[tuple[int, ...], ...]


@dataclass
class LookupRuntimeProvider:
    """How to look rows up by key at runtime; ``key_names`` are the source columns matched by the join."""

    connector: str
    source: LookupTableSource
    key_names: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)  # typed cache / retry options


class LookupTableSource(DynamicTableSource):
    """A source that can fetch rows by key (the right side of ``JOIN … FOR SYSTEM_TIME AS OF``)."""

    @abstractmethod
    def lookup_runtime_provider(self, ctx: LookupContext) -> LookupRuntimeProvider: ...


@dataclass(frozen=True)
class SinkContext:
    """What the planner hands to ``sink_runtime_provider``."""

    is_bounded: bool = False
    node_id: int | None = None


@dataclass
class SinkRuntimeProvider:
    """How to write at runtime. ``sink`` carries the connector's typed options."""

    connector: str
    sink: DynamicTableSink


class DynamicTableSink(ABC):
    """A table written by ``INSERT INTO``."""

    @abstractmethod
    def changelog_mode(self, requested: ChangelogMode) -> ChangelogMode:
        """The row kinds this sink accepts, given what the query would produce.

        The planner fails compilation if ``requested`` has kinds the answer lacks (DESIGN §5).
        """

    @abstractmethod
    def sink_runtime_provider(self, ctx: SinkContext) -> SinkRuntimeProvider: ...

    @abstractmethod
    def as_summary_string(self) -> str: ...

    def writes_micro_batches(self) -> bool:
        """Whether the connector's Spark side can also write one micro-batch handed to it as a DataFrame, exactly
        once per batch id (a batch writer next to its streaming writer, ``planengine.runtime.connectors``).

        Such a sink is written from the ``foreachBatch`` of the query that computes a node it shares with other
        sinks (the shared topology, ``planengine.plan.topology``); any other sink gets a query of its own that
        reads the shared node's output from an internal channel. Decided at compile time and recorded in the plan.
        """
        return False

    def copy(self) -> DynamicTableSink:
        return _copy.deepcopy(self)


# --- formats ---------------------------------------------------------------------------------------
class Format(ABC):
    """A configured format: its identifier, its typed (unprefixed) options, and the row kinds it carries."""

    identifier: str
    options: Mapping[str, Any]

    @abstractmethod
    def changelog_mode(self) -> ChangelogMode: ...

    def carries_row_kinds(self) -> bool:
        """Whether records say which kind of change they are (debezium-json, changelog-json)."""
        return not self.changelog_mode().contains_only_inserts()


class DecodingFormat(Format):
    """A format read by a source. The runtime decodes records; the planner needs the changelog mode."""


class EncodingFormat(Format):
    """A format written by a sink; ``changelog_mode`` is what it can encode."""
