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


def refuse_unsupported_clauses(tokens: Sequence[Token], text: str, statement: int, source: str | None) -> None:
    """Raise a SqlParseError at the first clause of ``UNSUPPORTED_CLAUSES`` in one statement's tokens."""
    for token, following in pairwise(tokens):
        word = token.text.upper()
        if word in UNSUPPORTED_CLAUSES and token.token_type != TokenType.IDENTIFIER \
                and following.token_type == TokenType.L_PAREN:
            raise sql_error(f"{word} is not supported by planengine", text, token.start, statement=statement,
                            source=source, hint=UNSUPPORTED_CLAUSES[word])
