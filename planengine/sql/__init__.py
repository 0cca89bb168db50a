"""The SQL front end: Flink SQL text in, typed statements and sqlglot trees (Flink dialect) out.

``parse_script`` is the pipeline in brief: tokenize once, split on ``;``, parse each statement with the
Flink dialect, convert it to a dataclass. Every failure is a ``SqlParseError`` with statement number,
line and column in the script.
"""

from __future__ import annotations

from planengine.sql.accessors import QueryHint, query_hints, system_time_as_of, table_options_hint
from planengine.sql.api import (
    ends_statement,
    parse_expression,
    parse_query,
    parse_script,
    parse_type,
    statement_texts,
)
from planengine.sql.dialect import Flink
from planengine.sql.type_render import render_type

__all__ = [
    "Flink",
    "QueryHint",
    "ends_statement",
    "parse_expression",
    "parse_query",
    "parse_script",
    "parse_type",
    "query_hints",
    "render_type",
    "statement_texts",
    "system_time_as_of",
    "table_options_hint",
]
