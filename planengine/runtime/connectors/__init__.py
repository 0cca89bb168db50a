"""Connectors at run time: how a planner-side source or sink object becomes Spark reads and writes.

Dispatch is by the runtime provider's connector identifier. A connector's run-time module registers itself
with ``@source_reader("id")`` / ``@sink_writer("id")`` / ``@batch_sink_writer("id")``; it is found

* for ours, by name: ``planengine.runtime.connectors.<id with '-' → '_'>`` (``print`` → ``print_sink``,
  ``upsert-kafka`` → ``kafka``), so adding one never edits this file;
* for a connector in another distribution, through the entry-point group ``planengine.runtime_connectors``:
  ``<id> = "<module>"`` names the module to import (its plan-time factory is in ``planengine.factories``), so
  a third-party connector plugs in both halves without living in this package.

Contracts:

* A source reader ``read(source, ctx, node) -> SourceFrame``: a streaming DataFrame whose columns are the
  source's produced fields **by their field names** in produced order, plus ``_rowkind`` when the format
  carries row kinds (``updating=True``). The scan translator renames them to ``f0..fn``.
* A sink writer ``write(stream, sink, node, ctx, query) -> StreamingQuery`` starts one streaming query
  named ``query.name`` with checkpoint ``query.checkpoint``. ``stream`` has the sink's columns
  (``f0..fn`` = the table's persisted columns, in table order) and ``_rowkind`` when ``stream.updating``.
  Writers that commit through ``foreachBatch`` call ``query.fence(batch_id)`` before writing.
* A batch writer ``open(sink, node, ctx, options) -> write(stream, batch_id)``, for sinks whose planner side
  says ``writes_micro_batches()``: a query shared by several sinks (``planengine.runtime.engine.topology``) calls
  ``write`` from its ``foreachBatch`` with the sink's rows of one micro-batch (a static DataFrame, same columns
  as above) and the batch id. Writing a batch id twice must leave the table as writing it once (Spark replays
  the last batch after a failure): the file sink's manifest, the JDBC commit table keyed by ``options.name``
  (the sink's uid). ``options.fence(batch_id)`` before committing.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.expressions import render_spark_type

GROUP = "planengine.runtime_connectors"

SourceReader = Callable[[Any, Any, Any], "SourceFrame"]
SinkWriter = Callable[[Any, Any, Any, Any, "QueryOptions"], Any]

_READERS: dict[str, SourceReader] = {}
_WRITERS: dict[str, SinkWriter] = {}
BatchWriter = Callable[[Any, int], None]
BatchWriterFactory = Callable[[Any, Any, Any, "BatchOptions"], BatchWriter]
_BATCH_WRITERS: dict[str, BatchWriterFactory] = {}


@dataclass
class SourceFrame:
    df: Any
    updating: bool = False
    # Set when the connector itself knows its input is finite (for logs; until-idle does not rely on it).
    bounded: bool = True


@dataclass
class QueryOptions:
    """How the executor wants a sink query started."""

    name: str
    checkpoint: str
    trigger: dict[str, Any] = field(default_factory=dict)  # kwargs for DataStreamWriter.trigger, {} = default
    fence: Callable[[int], None] = lambda batch_id: None  # raises when this run lost the job root

    def configure(self, writer: Any) -> Any:
        writer = writer.queryName(self.name).option("checkpointLocation", self.checkpoint)
        return writer.trigger(**self.trigger) if self.trigger else writer


@dataclass
class BatchOptions:
    """What a batch writer is opened with inside a shared query."""

    name: str  # the sink's uid: keys its exactly-once bookkeeping, names it in logs
    fence: Callable[[int], None] = lambda batch_id: None  # raises when this run lost the job root


def batch_sink_writer(identifier: str) -> Callable[[BatchWriterFactory], BatchWriterFactory]:
    def register(fn: BatchWriterFactory) -> BatchWriterFactory:
        _BATCH_WRITERS[identifier] = fn
        return fn

    return register


def get_batch_sink_writer(identifier: str) -> BatchWriterFactory:
    if identifier not in _BATCH_WRITERS:
        _load(identifier)
    if identifier not in _BATCH_WRITERS:
        raise ValidationError(f"connector '{identifier}' says it writes micro-batches, but its Spark side has no "
                              "batch writer", hint="add a @batch_sink_writer to the connector's runtime module, or "
                                                   "make writes_micro_batches() return False and compile again")
    return _BATCH_WRITERS[identifier]


def source_reader(identifier: str) -> Callable[[SourceReader], SourceReader]:
    def register(fn: SourceReader) -> SourceReader:
        _READERS[identifier] = fn
        return fn

    return register


def sink_writer(identifier: str) -> Callable[[SinkWriter], SinkWriter]:
    def register(fn: SinkWriter) -> SinkWriter:
        _WRITERS[identifier] = fn
        return fn

    return register


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def _load(identifier: str) -> None:
    """Import the run-time module of ``identifier``: ours by name, else the one its entry point names."""
    module = f"{__name__}.{_BUILTIN.get(identifier, identifier).replace('-', '_')}"
    try:
        importlib.import_module(module)
        return
    except ModuleNotFoundError as error:
        if error.name != module:
            raise
    entry = _entry_points().get(identifier)
    if entry is None:
        return
    try:
        entry.load()
    except ImportError as error:
        raise ValidationError(f"connector '{identifier}': its Spark side {entry.value} (entry point of {GROUP}) "
                              f"cannot be imported: {error}",
                              hint="install the plug-in (and its dependencies) where the driver and executors "
                                   "run") from error


def _plugin_hint(identifier: str) -> str:
    entry = _entry_points().get(identifier)
    if entry is None:
        return f"a plug-in connector declares its Spark module in the entry-point group {GROUP}"
    return f"{entry.value} (its {GROUP} entry point) was imported but registered nothing for '{identifier}'"


def forget(identifier: str) -> None:
    """Drop ``identifier``'s registrations and the cached entry points (after installing a plug-in; tests)."""
    for registry in (_READERS, _WRITERS, _BATCH_WRITERS):
        registry.pop(identifier, None)
    _entry_points.cache_clear()


_BUILTIN = {"print": "print_sink", "upsert-kafka": "kafka"}


def get_source_reader(identifier: str) -> SourceReader:
    if identifier not in _READERS:
        _load(identifier)
    if identifier not in _READERS:
        raise ValidationError(f"connector '{identifier}' cannot be read by this engine's Spark runtime; "
                              + _plugin_hint(identifier),
                              hint="use a connector with a runtime reader: " + ", ".join(sorted(_READERS) or ["-"]))
    return _READERS[identifier]


def get_sink_writer(identifier: str) -> SinkWriter:
    if identifier not in _WRITERS:
        _load(identifier)
    if identifier not in _WRITERS:
        raise ValidationError(f"connector '{identifier}' cannot be written by this engine's Spark runtime; "
                              + _plugin_hint(identifier),
                              hint="use a connector with a runtime writer: " + ", ".join(sorted(_WRITERS) or ["-"]))
    return _WRITERS[identifier]


def spark_schema_ddl(names: list[str], types: list[Any]) -> str:
    """``\\`a\\` INT, \\`b\\` STRING`` for ``DataStreamReader.schema``."""

    return ", ".join(f"`{n.replace('`', '``')}` {render_spark_type(t)}" for n, t in zip(names, types))
