"""``'format' = 'changelog-json'``: planengine's own changelog format.

Each record is a JSON object with the table's columns plus ``"op"``: ``+I``, ``-U``, ``+U`` or ``-D`` (the
row kind's short string, as in the runtime's ``_rowkind`` column). It reads and writes every row kind, so a
sink using it accepts any changelog and a source using it produces I,UB,UA,D unless ``'changelog-mode'``
says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planengine.connectors.factories import FactoryContext
from planengine.connectors.options import ConfigOption, bool_option
from planengine.errors import OptionError
from planengine.formats.common import BuiltinFormatFactory
from planengine.formats.json import TIMESTAMP_FORMAT_STANDARD
from planengine.ir.changelog import ALL

OP_FIELD = "op"

IGNORE_PARSE_ERRORS = bool_option("ignore-parse-errors", default=False,
                                  description="Skip records that cannot be parsed instead of failing.")


class ChangelogJsonFormatFactory(BuiltinFormatFactory):
    factory_identifier = "changelog-json"
    description = "JSON objects with an 'op' field (+I, -U, +U, -D) next to the columns. Full changelog."
    decoding_mode = ALL
    encoding_mode = ALL

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (IGNORE_PARSE_ERRORS, TIMESTAMP_FORMAT_STANDARD)

    def check_schema(self, ctx: FactoryContext, options: Mapping[str, Any]) -> None:
        if OP_FIELD in {c.name for c in ctx.schema.physical_columns}:
            raise OptionError(
                f"table {ctx.identifier}: format 'changelog-json' stores the row kind in the field '{OP_FIELD}', "
                f"which clashes with the column `{OP_FIELD}`",
                hint="rename that column",
            )
