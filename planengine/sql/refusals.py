"""Flink syntax planengine knows it does not run, refused by name before parsing.

Without this, such a clause reaches sqlglot's parser and fails somewhere inside it with a message about a
parenthesis (``MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts …)`` → "expected ')', found 'ORDER BY'"), which
reads like a typo. Naming the feature, where it is and what to write instead saves the user the search.

>>> from planengine.sql import parse_script
>>> parse_script("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts MEASURES A.v AS v PATTERN (A) "
...              "DEFINE A AS A.v > 1)")
Traceback (most recent call last):
...
planengine.errors.SqlParseError: statement 1, line 1, column 17: MATCH_RECOGNIZE is not supported by planengine
...
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from sqlglot.tokens import Token, TokenType

from planengine.sql.errors import sql_error

# Clause keyword -> what to write instead. Matched only as an unquoted word followed by '(' (so a column
# written `match_recognize` in backquotes is still a column).
UNSUPPORTED_CLAUSES: dict[str, str] = {
    "MATCH_RECOGNIZE": (
        "planengine has no pattern recognition (CEP). A pattern over consecutive rows of a key can often be "
        "written with LAG(...) OVER (PARTITION BY <key> ORDER BY <time attribute>) and a WHERE on the result, "
        "or with an interval join of the table with itself; otherwise run this query on Flink"
    ),
}


# Flink statements planengine does not run, by their leading words -> what to do instead. Without this they fail
# as "unknown statement" (read as a typo) or with a list of the forms planengine knows; the grammar drift guard
# (tests/grammar, docs/testing.md) found them: Flink 2.3's parser accepts each of them.
UNSUPPORTED_STATEMENTS: dict[tuple[str, ...], str] = {
    ("LOAD", "MODULE"): "planengine has Flink's core functions built in and loads no other module",
    ("UNLOAD", "MODULE"): "planengine has Flink's core functions built in and loads no other module",
    ("ADD", "JAR"): "planengine loads no jars at run time; Python functions are named with CREATE FUNCTION ... "
                    "LANGUAGE PYTHON",
    ("REMOVE", "JAR"): "planengine loads no jars at run time",
    ("SHOW", "JARS"): "planengine loads no jars at run time",
    ("SHOW", "JOBS"): "jobs are SparkPlanJob resources of the operator (docs/operator.md): `kubectl get sparkplanjobs`",
    ("STOP", "JOB"): "jobs are SparkPlanJob resources of the operator (docs/operator.md), suspended or deleted there",
    ("DESCRIBE", "JOB"): "jobs are SparkPlanJob resources of the operator (docs/operator.md)",
    ("TRUNCATE", "TABLE"): "planengine runs streaming jobs only; Flink allows TRUNCATE TABLE in batch mode",
    ("ANALYZE", "TABLE"): "planengine keeps no table statistics; Flink allows ANALYZE TABLE in batch mode",
    ("CALL",): "planengine's catalogs have no procedures",
    ("ALTER", "DATABASE"): "planengine alters tables only (ALTER TABLE)",
    ("ALTER", "CATALOG"): "planengine alters tables only (ALTER TABLE)",
}


def refuse_unsupported_clauses(tokens: Sequence[Token], text: str, statement: int, source: str | None) -> None:
    """Raise a SqlParseError for a statement of ``UNSUPPORTED_STATEMENTS`` or at the first clause of
    ``UNSUPPORTED_CLAUSES`` in one statement's tokens."""
    quoted = (TokenType.IDENTIFIER, TokenType.STRING)
    words = tuple("" if t.token_type in quoted else t.text.upper() for t in tokens[:2])
    for lead, hint in UNSUPPORTED_STATEMENTS.items():
        if words[: len(lead)] == lead:
            raise sql_error(f"{' '.join(lead)} is not supported by planengine", text, tokens[0].start,
                            statement=statement, source=source, hint=hint)
    for token, following in pairwise(tokens):
        word = token.text.upper()
        if word in UNSUPPORTED_CLAUSES and token.token_type != TokenType.IDENTIFIER \
                and following.token_type == TokenType.L_PAREN:
            raise sql_error(f"{word} is not supported by planengine", text, token.start, statement=statement,
                            source=source, hint=UNSUPPORTED_CLAUSES[word])
