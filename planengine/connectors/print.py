"""``'connector' = 'print'``: writes every row, prefixed by its row kind, to the driver's stdout/stderr.

For debugging, so it accepts any changelog: rows print as ``+I[1, a]``, ``-U[…]``, ``+U[…]``, ``-D[…]``
(with ``print-identifier> `` in front when set), like Flink's print connector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.connectors.base import DynamicTableSink, SinkContext, SinkRuntimeProvider
from planengine.connectors.factories import DynamicTableSinkFactory, FactoryContext
from planengine.connectors.helper import TableFactoryHelper
from planengine.connectors.options import ConfigOption, ValidatedOptions, bool_option, string_option
from planengine.ir.changelog import ChangelogMode

PRINT_IDENTIFIER = string_option("print-identifier", description="Prefix of every printed line.")
STANDARD_ERROR = bool_option("standard-error", default=False, description="Print to stderr instead of stdout.")


class PrintTableSink(DynamicTableSink):
    def __init__(self, identifier: object, options: ValidatedOptions):
        self.identifier = identifier
        self.options = options

    @property
    def print_identifier(self) -> str | None:
        return self.options.value(PRINT_IDENTIFIER)

    @property
    def standard_error(self) -> bool:
        return bool(self.options.value(STANDARD_ERROR))

    def changelog_mode(self, requested: ChangelogMode) -> ChangelogMode:
        return requested

    def writes_micro_batches(self) -> bool:
        return True  # planengine.runtime.connectors: a batch writer next to the streaming one

    def sink_runtime_provider(self, ctx: SinkContext) -> SinkRuntimeProvider:
        return SinkRuntimeProvider("print", self)

    def as_summary_string(self) -> str:
        target = "stderr" if self.standard_error else "stdout"
        prefix = f", print-identifier={self.print_identifier}" if self.print_identifier else ""
        return f"print({target}{prefix})"


class PrintTableFactory(DynamicTableSinkFactory):
    factory_identifier = "print"
    description = "Prints each row with its row kind (+I, -U, +U, -D). Accepts any changelog."
    changelog_doc = "Sink: accepts any changelog (returns the requested mode); each line starts with the row kind."
    sink_class = PrintTableSink

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (PRINT_IDENTIFIER, STANDARD_ERROR)

    def mutable_options(self) -> frozenset[str]:
        return frozenset({PRINT_IDENTIFIER.key, STANDARD_ERROR.key})

    def create_dynamic_table_sink(self, ctx: FactoryContext) -> PrintTableSink:
        return PrintTableSink(ctx.identifier, TableFactoryHelper(self, ctx).validate())
