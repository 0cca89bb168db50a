"""``'format' = 'debezium-json'``: Debezium change events (``before``/``after``/``op``); a full changelog.

Reading maps ``c``/``r`` to +I, ``u`` to -U and +U, ``d`` to -D; writing emits +I/+U as ``c`` and -U/-D as
``d`` (Flink's encoding), so both directions carry I,UB,UA,D.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.connectors.options import ConfigOption, bool_option
from planengine.formats.common import BuiltinFormatFactory
from planengine.formats.json import TIMESTAMP_FORMAT_STANDARD
from planengine.ir.changelog import ALL

SCHEMA_INCLUDE = bool_option(
    "schema-include", default=False,
    description="Records carry Debezium's 'schema'/'payload' envelope (Kafka Connect with schemas enabled).")
IGNORE_PARSE_ERRORS = bool_option("ignore-parse-errors", default=False,
                                  description="Skip records that cannot be parsed instead of failing.")


class DebeziumJsonFormatFactory(BuiltinFormatFactory):
    factory_identifier = "debezium-json"
    description = "Debezium JSON change events. Full changelog (I,UB,UA,D) both ways."
    decoding_mode = ALL
    encoding_mode = ALL

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (SCHEMA_INCLUDE, IGNORE_PARSE_ERRORS, TIMESTAMP_FORMAT_STANDARD)
