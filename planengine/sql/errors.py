"""Every front-end failure becomes one :class:`planengine.errors.SqlParseError`.

The message says what was expected, the location names statement, line and column (1-based, relative
to the whole script), and an excerpt with a caret shows the spot, so users never need to count
characters.
"""

from __future__ import annotations

from planengine.errors import SourceLocation, SqlParseError
from planengine.sql.positions import caret_excerpt, line_and_column


def sql_error(
    message: str,
    script: str,
    offset: int,
    *,
    statement: int | None = None,
    source: str | None = None,
    hint: str | None = None,
) -> SqlParseError:
    """A SqlParseError pointing at character ``offset`` of ``script``."""
    line, column = line_and_column(script, offset)
    error = SqlParseError(
        f"{message}\n{caret_excerpt(script, line, column)}",
        location=SourceLocation(statement=statement, line=line, column=column, source=source),
        hint=hint,
    )
    error.reason = message  # the message without the excerpt, for callers that show their own
    return error
