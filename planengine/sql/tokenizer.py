"""Flink's lexical rules as a sqlglot tokenizer.

Flink (Calcite) quotes identifiers with backticks, strings with single quotes doubled for escaping, and
treats every ``/*+ ... */`` as a hint, wherever it appears: after SELECT/INSERT (query hints) and right
after a table name (``OPTIONS`` table hints). sqlglot only recognises hints after a few keywords, so the
tokenizer emits a HINT token after any token and the parser decides where one is legal.
"""

from __future__ import annotations

from sqlglot import tokens
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

_UNTERMINATED = {
    "'": "unterminated string literal",
    "`": "unterminated quoted identifier",
}


class FlinkTokenError(TokenError):
    """A tokenizing failure with the offending offset in the script and a user-facing reason."""

    def __init__(self, reason: str, offset: int, context: TokenError):
        super().__init__(str(context), start=context.start, end=context.end)
        self.reason = reason
        self.offset = offset


class FlinkTokenizer(tokens.Tokenizer):
    QUOTES = ["'"]
    IDENTIFIERS = ["`"]
    STRING_ESCAPES = ["'"]
    IDENTIFIER_ESCAPES = ["`"]
    # Flink has no opaque "commands": SHOW, EXPLAIN, EXECUTE ... are all real statements whose
    # arguments must be tokenized, not swallowed as one string.
    COMMANDS: set[TokenType] = set()
    TOKENS_PRECEDING_HINT = set(TokenType)
    NESTED_COMMENTS = False

    KEYWORDS = {
        **tokens.Tokenizer.KEYWORDS,
        "STRING": TokenType.TEXT,
        "BYTES": TokenType.VARBINARY,
        "TIMESTAMP_LTZ": TokenType.TIMESTAMPLTZ,
    }
    # Not keywords in Flink: EXPLAIN is a statement we parse, SESSION is a window function name.
    for _word in ("EXPLAIN", "SESSION", "CALL", "OPTIMIZE", "PREPARE", "VACUUM"):
        KEYWORDS.pop(_word, None)
    del _word

    def tokenize(self, sql: str) -> list[Token]:
        try:
            return super().tokenize(sql)
        except TokenError as error:
            raise _describe(error, self, sql) from error


def _describe(error: TokenError, tokenizer: FlinkTokenizer, sql: str) -> FlinkTokenError:
    """Turn sqlglot's generic "Error tokenizing '...'" into a reason and the offset where it starts."""
    cause = str(error.__cause__ or "")
    core = tokenizer._core
    offset = getattr(core, "_start", None)
    if offset is None:
        offset = tokenizer.tokens[-1].end + 1 if tokenizer.tokens else 0
    reason = "cannot tokenize the input"
    if cause.startswith("Missing "):
        delimiter = cause.split()[1]
        reason = _UNTERMINATED.get(delimiter, f"missing closing {delimiter}")
    elif sql[offset : offset + 2] == "/*":
        reason = "unterminated comment or hint: /* has no closing */"
    elif "'" in sql[offset : offset + 3]:  # a string, maybe with a prefix (N'…', X'…'), reaching the end
        reason = _UNTERMINATED["'"]
    elif cause:
        reason = f"cannot tokenize the input: {cause}"
    return FlinkTokenError(reason, offset, error)
