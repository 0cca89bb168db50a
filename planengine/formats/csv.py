"""``'format' = 'csv'``: delimited text; insert-only. Flat rows only (Spark's CSV has no nested types)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planengine.connectors.factories import FactoryContext
from planengine.connectors.options import ConfigOption, OptionType, bool_option, option, string_option
from planengine.errors import OptionError
from planengine.formats.common import BuiltinFormatFactory
from planengine.ir.types import Kind


def _single_char(text: str) -> str:
    unescaped = {"\\t": "\t", "\\n": "\n", "\\\\": "\\"}.get(text, text)
    if len(unescaped) != 1:
        raise ValueError("a single character (use '\\t' for a tab)")
    return unescaped


CHAR: OptionType[str] = OptionType("Character", _single_char)

FIELD_DELIMITER = option("field-delimiter", CHAR, default=",", description="Field separator (one character).")
QUOTE_CHARACTER = option("quote-character", CHAR, default='"', description="Character that encloses values.")
DISABLE_QUOTE_CHARACTER = bool_option("disable-quote-character", default=False,
                                      description="Write and read values without quoting.")
ESCAPE_CHARACTER = option("escape-character", CHAR, description="Character that escapes quotes inside values.")
ALLOW_COMMENTS = bool_option("allow-comments", default=False, description="Ignore lines starting with '#'.")
IGNORE_PARSE_ERRORS = bool_option("ignore-parse-errors", default=False,
                                  description="Skip fields and rows with parse errors instead of failing.")
NULL_LITERAL = string_option("null-literal", description="String that stands for a null value (e.g. 'n/a').")

_NESTED = (Kind.ROW, Kind.MAP, Kind.MULTISET, Kind.ARRAY)


class CsvFormatFactory(BuiltinFormatFactory):
    factory_identifier = "csv"
    description = "Comma-separated values (RFC 4180 style). Insert-only; flat columns only."

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (FIELD_DELIMITER, QUOTE_CHARACTER, DISABLE_QUOTE_CHARACTER, ESCAPE_CHARACTER, ALLOW_COMMENTS,
                IGNORE_PARSE_ERRORS, NULL_LITERAL)

    def check_schema(self, ctx: FactoryContext, options: Mapping[str, Any]) -> None:
        nested = [f"`{c.name}` {c.type}" for c in ctx.schema.physical_columns if c.type.kind in _NESTED]
        if nested:
            raise OptionError(
                f"table {ctx.identifier}: format 'csv' cannot hold nested columns: {', '.join(nested)}",
                hint="use 'json' or 'parquet' for nested data, or flatten those columns",
            )
