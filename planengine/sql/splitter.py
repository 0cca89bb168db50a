"""Split a script into statements on ``;``, working on sqlglot tokens rather than characters.

Strings, quoted identifiers, comments and hints are already single tokens (or no token at all), so a
``;`` inside them never reaches us. What remains is Flink's one block construct: a statement set,
``EXECUTE STATEMENT SET BEGIN ...; ...; END`` (also after ``COMPILE PLAN ... FOR``) or the legacy
``BEGIN STATEMENT SET; ...; END``, whose inner ``;`` belong to the block. ``CASE ... END`` inside the
block is counted so its ``END`` does not close the block.

The parser (``planengine.sql.parser``) uses :func:`split_tokens` for its own chunking, so the splitter
and ``sqlglot.parse(script, read="flink")`` always agree on statement boundaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot.tokens import Token, TokenType

from planengine.sql.errors import sql_error
from planengine.sql.positions import line_and_column


@dataclass(frozen=True)
class StatementSource:
    """One statement's tokens and where it sits in the script (offsets and 1-based line/column)."""

    index: int
    tokens: tuple[Token, ...]
    text: str
    start: int
    line: int
    column: int


@dataclass(frozen=True)
class Chunk:
    tokens: tuple[Token, ...]
    # The BEGIN of a statement set that the script ended inside of, if any.
    unclosed_begin: Token | None = None


def _upper(token: Token) -> str:
    return token.text.upper()


def _opens_block(tokens: Sequence[Token], i: int, chunk_start: int) -> bool:
    """Is ``tokens[i]`` (a BEGIN) the start of a statement-set block?"""
    if tokens[i].token_type != TokenType.BEGIN:
        return False
    following = [_upper(t) for t in tokens[i + 1 : i + 3]]
    if i == chunk_start and following == ["STATEMENT", "SET"]:
        return True  # legacy: BEGIN STATEMENT SET;
    preceding = [_upper(t) for t in tokens[max(chunk_start, i - 2) : i]]
    return preceding == ["STATEMENT", "SET"]  # [EXECUTE | ... FOR] STATEMENT SET BEGIN


def split_tokens(tokens: Sequence[Token]) -> list[Chunk]:
    """Group tokens into statements; empty statements (``;;``) are dropped."""
    chunks: list[Chunk] = []
    current: list[Token] = []
    chunk_start = 0
    block: Token | None = None
    case_depth = 0

    for i, token in enumerate(tokens):
        kind = token.token_type
        if block is None and kind == TokenType.SEMICOLON:
            if current:
                chunks.append(Chunk(tuple(current)))
            current = []
            chunk_start = i + 1
            continue
        current.append(token)
        if block is None:
            if _opens_block(tokens, i, chunk_start):
                block, case_depth = token, 0
        elif kind == TokenType.CASE:
            case_depth += 1
        elif kind == TokenType.END:
            if case_depth:
                case_depth -= 1
            else:
                block = None

    if current:
        chunks.append(Chunk(tuple(current), unclosed_begin=block))
    return chunks


def split_statements(text: str, tokens: Sequence[Token], source: str | None = None) -> list[StatementSource]:
    """Statements of ``text`` (already tokenized into ``tokens``) with their source text and position."""
    statements = []
    for number, chunk in enumerate(split_tokens(tokens), start=1):
        first, last = chunk.tokens[0], chunk.tokens[-1]
        line, column = line_and_column(text, first.start)
        statements.append(
            StatementSource(
                index=number,
                tokens=chunk.tokens,
                text=text[first.start : last.end + 1],
                start=first.start,
                line=line,
                column=column,
            )
        )
        if chunk.unclosed_begin is not None:
            raise sql_error(
                "unbalanced BEGIN … END: statement set is not closed with END",
                text,
                chunk.unclosed_begin.start,
                statement=number,
                source=source,
            )
    return statements
