"""Entry points: scripts to statements, and single queries, expressions and types to sqlglot trees."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from planengine.errors import SourceLocation, SqlParseError
from planengine.sql.convert import Origin, convert
from planengine.sql.deep_stack import too_deep
from planengine.sql.dialect import Flink
from planengine.sql.errors import sql_error
from planengine.sql.parser import FlinkParseError, FlinkParser
from planengine.sql.positions import line_and_column
from planengine.sql.refusals import refuse_unsupported_clauses
from planengine.sql.splitter import StatementSource, split_statements, split_tokens
from planengine.sql.statements import Query, Statement
from planengine.sql.tokenizer import FlinkTokenError

_DIALECT = Flink()


def _tokenize(text: str, source: str | None) -> list[Token]:
    try:
        return _DIALECT.tokenize(text)
    except FlinkTokenError as error:
        before = [tok for tok in _DIALECT.tokenizer_class().tokenize(text[: error.offset])] if error.offset else []
        statement = len(split_tokens(before)) + (1 if not before or before[-1].text == ";" else 0)
        raise sql_error(error.reason, text, error.offset, statement=statement, source=source) from error


def _parse_with(
    method: Callable[[FlinkParser, list[Token], str], list | exp.Expression | None],
    tokens: Sequence[Token],
    text: str,
    statement: int | None,
    source: str | None,
):
    parser = _DIALECT.parser()
    try:
        return method(parser, list(tokens), text)
    except FlinkParseError as error:
        token = error.token
        offset = 0 if token is None else (token.end + 1 if error.at_end else token.start)
        raise sql_error(error.reason, text, offset, statement=statement, source=source) from error
    except FlinkTokenError as error:  # the parser tokenizes hint bodies (/*+ ... */) itself
        offset = _failing_hint(tokens)
        raise sql_error(f"invalid hint: {error.reason}", text, offset, statement=statement, source=source) from error
    except ParseError as error:  # a sqlglot error raised outside raise_error: keep its words
        first = tokens[0].start if tokens else 0
        raise sql_error(str(error).split("\n")[0], text, first, statement=statement, source=source) from error


def _failing_hint(tokens: Sequence[Token]) -> int:
    """Offset of the first hint whose body does not tokenize (else of the statement)."""
    for token in tokens:
        if token.token_type == TokenType.HINT:
            body = token.text.removeprefix("/*+").removesuffix("*/")
            try:
                _DIALECT.tokenize(body)
            except FlinkTokenError:
                return token.start
    return tokens[0].start if tokens else 0


def _parse_statement(source_stmt: StatementSource, text: str, source: str | None) -> exp.Expression:
    refuse_unsupported_clauses(source_stmt.tokens, text, source_stmt.index, source)
    results = _parse_with(FlinkParser.parse, source_stmt.tokens, text, source_stmt.index, source)
    if not results or results[0] is None:
        raise sql_error("expected a statement", text, source_stmt.start, statement=source_stmt.index, source=source)
    return results[0]


def parse_script(text: str, source: str | None = None) -> list[Statement]:
    """All statements of a script, in order.

    >>> [type(s).__name__ for s in parse_script("SET 'a' = 'b'; SELECT 1")]
    ['SetOption', 'Query']
    """
    statements = []
    for statement in split_statements(text, _tokenize(text, source), source) if text.strip() else []:
        try:
            node = _parse_statement(statement, text, source)
            origin = Origin(text, statement.index, statement.start, statement.text, source)
            statements.append(convert(node, origin))
        except RecursionError:
            raise too_deep(deepest_point(statement, text, source)) from None
        except SqlParseError as error:
            if error.location is not None:
                raise
            raise sql_error(error.message, text, statement.start, statement=statement.index, source=source) from None
    return statements


def statement_texts(text: str, source: str | None = None) -> list[str]:
    """The text of each statement of a script, without its ``;``, for a caller that parses them one at a time.

    The SQL client does, so that the positions an error reports are within the statement the user just typed, not
    within whatever else they typed with it.

    >>> statement_texts("SET 'a' = 'b';\\n  SELECT 1\\n  FROM t; ;")
    ["SET 'a' = 'b'", 'SELECT 1\\n  FROM t']
    """
    return [s.text for s in split_statements(text, _tokenize(text, source), source)] if text.strip() else []


def deepest_point(statement: StatementSource, text: str, source: str | None) -> SourceLocation:
    """Where ``statement`` is nested deepest: its first innermost parenthesis, else its start.

    >>> from planengine.sql.splitter import split_statements
    >>> [s] = split_statements("SELECT ((1)) + (2)", _tokenize("SELECT ((1)) + (2)", None))
    >>> deepest_point(s, "SELECT ((1)) + (2)", None).column
    9
    """
    depth, deepest, offset = 0, 0, statement.start
    for token in statement.tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if depth > deepest:
                deepest, offset = depth, token.start
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
    line, column = line_and_column(text, offset)
    return SourceLocation(statement=statement.index, line=line, column=column, source=source)


def ends_statement(text: str) -> bool:
    """Whether ``text`` ends with a complete statement: a ``;`` outside strings, comments and statement-set
    blocks (what an interactive prompt waits for before it runs what was typed).

    >>> ends_statement("SELECT 1;"), ends_statement("SELECT ';'"), ends_statement("EXECUTE STATEMENT SET BEGIN"
    ...     " INSERT INTO t SELECT 1;"), ends_statement("SELECT 'it''s"), ends_statement("SELECT 1; -- done")
    (True, False, False, False, True)
    """
    try:
        tokens = _DIALECT.tokenize(text)
    except FlinkTokenError:  # e.g. a string not closed yet: the statement goes on on the next line
        return False
    if not tokens or tokens[-1].token_type != TokenType.SEMICOLON:
        return False
    return all(chunk.unclosed_begin is None for chunk in split_tokens(tokens))


def parse_query(text: str) -> exp.Expression:
    """Exactly one query (SELECT, VALUES, WITH, UNION), e.g. a view body.

    >>> parse_query("SELECT `a` FROM t").sql("flink")
    'SELECT `a` FROM t'
    """
    statements = parse_script(text)
    if len(statements) != 1 or not isinstance(statements[0], Query):
        raise SqlParseError(f"expected exactly one query, got {len(statements)} statement(s)")
    return statements[0].query


def parse_expression(text: str) -> exp.Expression:
    """One scalar expression, e.g. a computed column or a watermark strategy.

    >>> parse_expression("ts - INTERVAL '5' SECOND").sql("flink")
    "ts - INTERVAL '5' SECOND"
    """
    node = _parse_with(FlinkParser.parse_scalar, _tokenize(text, None), text, None, None)
    if node is None:
        raise SqlParseError("expected an expression")
    return node


def parse_type(text: str) -> exp.DataType:
    """One Flink type, e.g. ``DECIMAL(10, 2) NOT NULL`` or ``ROW<a INT, b ARRAY<STRING>>``.

    >>> from planengine.sql.type_render import render_type
    >>> render_type(parse_type("varchar(2147483647) not null"))
    'STRING NOT NULL'
    """
    node = _parse_with(FlinkParser.parse_type, _tokenize(text, None), text, None, None)
    assert isinstance(node, exp.DataType)
    return node
