"""``'format' = 'json'``: one JSON object per line; insert-only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planengine.connectors.factories import FactoryContext
from planengine.connectors.options import ConfigOption, bool_option, enum_option
from planengine.errors import OptionError
from planengine.formats.common import BuiltinFormatFactory

IGNORE_PARSE_ERRORS = bool_option(
    "ignore-parse-errors", default=False,
    description="Skip records that cannot be parsed (fields that fail become null) instead of failing.")
FAIL_ON_MISSING_FIELD = bool_option(
    "fail-on-missing-field", default=False, description="Fail when a declared field is absent from a record.")
TIMESTAMP_FORMAT_STANDARD = enum_option(
    "timestamp-format.standard", ("SQL", "ISO-8601"), default="SQL",
    description="'SQL' reads/writes '2020-12-30 12:13:14.123', 'ISO-8601' reads/writes '2020-12-30T12:13:14.123'.")


class JsonFormatFactory(BuiltinFormatFactory):
    factory_identifier = "json"
    description = "JSON objects, one per line. Insert-only."

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (IGNORE_PARSE_ERRORS, FAIL_ON_MISSING_FIELD, TIMESTAMP_FORMAT_STANDARD)

    def check_schema(self, ctx: FactoryContext, options: Mapping[str, Any]) -> None:
        if options.get(IGNORE_PARSE_ERRORS.key) and options.get(FAIL_ON_MISSING_FIELD.key):
            raise OptionError(
                f"table {ctx.identifier}: format 'json' options 'ignore-parse-errors' and 'fail-on-missing-field' "
                "are both true, which contradict each other",
                hint="set at most one of them to 'true'",
            )
