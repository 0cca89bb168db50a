"""The Flink SQL dialect for sqlglot, registered as ``"flink"``.

sqlglot 30 ships no Flink dialect (no name clash), so ``sqlglot.parse_one(sql, read="flink")`` and
``expression.sql("flink")`` work anywhere once this module is imported. Identifiers keep their case
(Flink resolves them case-sensitively) and are quoted with backticks; keywords are case-insensitive.
"""

from __future__ import annotations

from sqlglot.dialects.dialect import Dialect, NormalizationStrategy

from planengine.sql.generator import FlinkGenerator
from planengine.sql.parser import FlinkParser
from planengine.sql.tokenizer import FlinkTokenizer


class Flink(Dialect):
    NORMALIZATION_STRATEGY = NormalizationStrategy.CASE_SENSITIVE
    # `t FOR SYSTEM_TIME AS OF x AS a`: the alias follows the version clause.
    ALIAS_POST_VERSION = True
    NULL_ORDERING = "nulls_are_small"

    Tokenizer = FlinkTokenizer
    Parser = FlinkParser
    Generator = FlinkGenerator
