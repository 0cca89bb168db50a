"""Connectors at run time: how a planner-side source or sink object becomes Spark reads and writes.

Dispatch is by the runtime provider's connector identifier (``filesystem``, ``datagen``, ``print``,
``blackhole`` here; ``jdbc``, ``kafka``, … by their owners). A connector module registers itself with
``@source_reader("id")`` / ``@sink_writer("id")``; modules are found by name
(``planengine.runtime.connectors.<id with '-' → '_'>``), so adding a connector never edits this file.

Contracts:

* A source reader ``read(source, ctx, node) -> SourceFrame``: a streaming DataFrame whose columns are the
  source's produced fields **by their field names** in produced order, plus ``_rowkind`` when the format
  carries row kinds (``updating=True``). The scan translator renames them to ``f0..fn``.
* A sink writer ``write(stream, sink, node, ctx, query) -> StreamingQuery`` starts one streaming query
  named ``query.name`` with checkpoint ``query.checkpoint``. ``stream`` has the sink's columns
  (``f0..fn`` = the table's persisted columns, in table order) and ``_rowkind`` when ``stream.updating``.
  Writers that commit through ``foreachBatch`` call ``query.fence(batch_id)`` before writing.
* A batch writer ``open(sink, node, ctx, options) -> write(stream, batch_id)``, for sinks whose planner side
  says ``writes_micro_batches()``: a query shared by several sinks (``planengine.runtime.topology``) calls
  ``write`` from its ``foreachBatch`` with the sink's rows of one micro-batch (a static DataFrame, same columns
  as above) and the batch id. Writing a batch id twice must leave the table as writing it once (Spark replays
  the last batch after a failure): the file sink's manifest, the JDBC commit table keyed by ``options.name``
  (the sink's uid). ``options.fence(batch_id)`` before committing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from planengine.errors import ValidationError

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
        _load(_BUILTIN.get(identifier, identifier))
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


def _load(identifier: str) -> None:
    module = f"{__name__}.{identifier.replace('-', '_')}"
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != module:
            raise


_BUILTIN = {"filesystem": "filesystem", "datagen": "datagen", "print": "print_sink", "blackhole": "blackhole",
            "upsert-kafka": "kafka"}


def get_source_reader(identifier: str) -> SourceReader:
    if identifier not in _READERS:
        _load(_BUILTIN.get(identifier, identifier))
    if identifier not in _READERS:
        raise ValidationError(f"connector '{identifier}' cannot be read by this engine's Spark runtime",
                              hint="use a connector with a runtime reader: " + ", ".join(sorted(_READERS) or ["-"]))
    return _READERS[identifier]


def get_sink_writer(identifier: str) -> SinkWriter:
    if identifier not in _WRITERS:
        _load(_BUILTIN.get(identifier, identifier))
    if identifier not in _WRITERS:
        raise ValidationError(f"connector '{identifier}' cannot be written by this engine's Spark runtime",
                              hint="use a connector with a runtime writer: " + ", ".join(sorted(_WRITERS) or ["-"]))
    return _WRITERS[identifier]


def spark_schema_ddl(names: list[str], types: list[Any]) -> str:
    """``\\`a\\` INT, \\`b\\` STRING`` for ``DataStreamReader.schema``."""
    from planengine.runtime.expressions import render_spark_type

    return ", ".join(f"`{n.replace('`', '``')}` {render_spark_type(t)}" for n, t in zip(names, types))
