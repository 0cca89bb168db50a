"""``'format' = 'parquet'``: columnar files; insert-only (filesystem connector only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.connectors.options import ConfigOption, enum_option
from planengine.formats.common import BuiltinFormatFactory

COMPRESSION = enum_option(
    "compression", ("none", "uncompressed", "snappy", "gzip", "lz4", "zstd", "brotli"), default="snappy",
    description="Compression codec of written files.")


class ParquetFormatFactory(BuiltinFormatFactory):
    factory_identifier = "parquet"
    description = "Apache Parquet files. Insert-only."

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (COMPRESSION,)
