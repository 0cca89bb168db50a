"""``'format' = 'json'``: one JSON object per line; insert-only.

Also the text layout of dates and timestamps that every JSON-based format (json, changelog-json,
debezium-json) writes, so the runtime sets it explicitly instead of inheriting a Spark default that is not
Flink's and may change between Spark releases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planengine.connectors.factories import FactoryContext
from planengine.connectors.options import ConfigOption, bool_option, enum_option
from planengine.errors import OptionError
from planengine.formats.common import BuiltinFormatFactory

SQL, ISO_8601 = "SQL", "ISO-8601"  # the values of 'timestamp-format.standard'

IGNORE_PARSE_ERRORS = bool_option(
    "ignore-parse-errors", default=False,
    description="Skip records that cannot be parsed (fields that fail become null) instead of failing.")
FAIL_ON_MISSING_FIELD = bool_option(
    "fail-on-missing-field", default=False, description="Fail when a declared field is absent from a record.")
TIMESTAMP_FORMAT_STANDARD = enum_option(
    "timestamp-format.standard", (SQL, ISO_8601), default=SQL,
    description="'SQL' reads/writes '2020-12-30 12:13:14.123', 'ISO-8601' reads/writes '2020-12-30T12:13:14.123'.")

DATE_PATTERN = "yyyy-MM-dd"  # Flink writes ISO_LOCAL_DATE under both standards


def timestamp_patterns(standard: str, fraction_digits: int) -> tuple[str, str]:
    """``(TIMESTAMP, TIMESTAMP_LTZ)`` text patterns (java.time syntax) that Flink's JSON format writes.

    Flink separates date and time by a space under ``'SQL'`` and by ``T`` under ``'ISO-8601'``, and writes a
    ``TIMESTAMP_LTZ`` in UTC with a literal ``Z``. Flink trims the fraction to its significant digits; a
    fixed width (3 up to ``TIMESTAMP(3)``, else 6: Spark keeps microseconds) is read back by Flink's and
    Spark's parsers alike and keeps every file of a sink the same shape.

    >>> timestamp_patterns("SQL", 3)
    ('yyyy-MM-dd HH:mm:ss.SSS', "yyyy-MM-dd HH:mm:ss.SSS'Z'")
    >>> timestamp_patterns("ISO-8601", 6)[0]
    "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"
    """
    separator = "'T'" if standard == ISO_8601 else " "
    local = f"{DATE_PATTERN}{separator}HH:mm:ss.{'S' * fraction_digits}"
    return local, f"{local}'Z'"


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
