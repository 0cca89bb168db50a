"""Tab completion at the prompt: SQL keywords, the session's catalogs, databases and tables, and the columns of the
tables the statement being typed names.

Everything comes from the session's catalog manager, so completion works before Spark ever starts and shows what
this session would resolve (temporary tables included). A statement being typed rarely parses, so the tables it
names are found on its tokens instead: every dotted name that the catalog resolves to a table or view counts, and so
does the alias written after it (``FROM clicks AS c`` makes ``c.`` complete the columns of ``clicks``).

A completer runs on every Tab: it must never fail or hang on a half-written statement, so tokenizer errors end the
statement where they start and catalog errors (an unreachable JDBC catalog) just offer nothing from that catalog.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from sqlglot.tokens import Token, TokenType

from planengine.catalog.manager import CatalogManager
from planengine.catalog.objects import ObjectIdentifier
from planengine.errors import PlanEngineError
from planengine.ir.types import quote_identifier
from planengine.sql.dialect import Flink
from planengine.sql.tokenizer import FlinkTokenError

#: Words of Flink SQL statements, clauses, types and the window functions, upper case (what Flink's docs write).
KEYWORDS = (
    "ADD", "AFTER", "ALL", "ALTER", "AND", "ARRAY", "AS", "ASC", "BEGIN", "BETWEEN", "BIGINT", "BOOLEAN", "BY",
    "BYTES", "CASE", "CAST", "CATALOG", "CATALOGS", "CHANGELOG_MODE", "CHAR", "COLUMN", "COLUMNS", "COMMENT",
    "COMPILE", "COMPUTED", "CREATE", "CROSS", "CUMULATE", "CURRENT", "CURRENT_TIMESTAMP", "DATABASE", "DATABASES",
    "DATE", "DECIMAL", "DELETE", "DESC", "DESCRIBE", "DESCRIPTOR", "DISTINCT", "DOUBLE", "DROP", "ELSE", "END",
    "ENFORCED", "ESTIMATED_COST", "EXECUTE", "EXISTS", "EXIT", "EXPLAIN", "FALSE", "FIRST", "FLOAT", "FOR", "FROM",
    "FULL", "FUNCTION", "FUNCTIONS", "GROUP", "HAVING", "HELP", "HOP", "IF", "IN", "INNER", "INSERT", "INT",
    "INTERVAL", "INTO", "IS", "JOIN", "JSON_EXECUTION_PLAN", "KEY", "LANGUAGE", "LATERAL", "LEFT", "LIKE", "LIMIT",
    "MAP", "METADATA", "MODIFY", "NOT", "NULL", "OF", "ON", "OR", "ORDER", "OUTER", "OVER", "OVERWRITE", "PARTITION",
    "PARTITIONED", "PLAN", "PLAN_ADVICE", "PRIMARY", "PYTHON", "QUIT", "RANGE", "RENAME", "REPLACE", "RESET",
    "RIGHT", "ROW", "ROWS", "ROW_NUMBER", "SECOND", "SELECT", "SESSION", "SET", "SHOW", "SMALLINT", "STATEMENT",
    "STRING", "SYSTEM", "SYSTEM_TIME", "TABLE", "TABLES", "TEMPORARY", "THEN", "TIMESTAMP", "TIMESTAMP_LTZ",
    "TINYINT", "TO", "TRUE", "TUMBLE", "UNION", "UNNEST", "USE", "USER", "VALUES", "VARCHAR", "VIEW", "VIEWS",
    "VIRTUAL", "WATERMARK", "WHEN", "WHERE", "WINDOW", "WITH",
)

_DIALECT = Flink()
_NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The name being typed at the cursor: dotted parts, each plain or back-quoted (a quote may still be open).
_TYPED_NAME = re.compile(r"((?:(?:`[^`]*`|[A-Za-z0-9_$]+)\.)*)(`[^`]*|[A-Za-z0-9_$]*)$")


@dataclass(frozen=True)
class Candidate:
    """One completion: the text to insert and what it is (shown beside it in the menu)."""

    text: str
    kind: str


class SqlCompleter(Completer):
    """prompt_toolkit's side of ``candidates``: the typed word is replaced by the chosen candidate."""

    def __init__(self, catalogs: CatalogManager):
        self.catalogs = catalogs

    def get_completions(self, document: Document, _event: CompleteEvent) -> Iterator[Completion]:
        match = _TYPED_NAME.search(document.text_before_cursor)
        partial = match.group(2) if match else ""
        try:
            found = candidates(self.catalogs, document.text, document.cursor_position)
        except Exception:  # a Tab must never end the prompt, whatever a catalog does (they are pluggable)
            return
        for candidate in found:
            yield Completion(candidate.text, start_position=-len(partial), display_meta=candidate.kind)


def candidates(catalogs: CatalogManager, text: str, cursor: int) -> list[Candidate]:
    """What may complete the word before ``cursor`` in ``text``: after ``a.`` or ``a.b.`` the databases, tables or
    columns that qualifier names; otherwise columns of the tables the statement names, then tables, databases,
    catalogs and keywords. Matching ignores case; names come back quoted when they need to be."""
    match = _TYPED_NAME.search(text[:cursor])
    assert match is not None  # every part of the pattern may be empty
    typed = match.group(0)
    qualifier = _parts(match.group(1))
    partial = match.group(2).lstrip("`").lower()
    # The statement without the word being typed: a back-quote opened there must not end the statement early.
    statement = _statement_tokens(text[: cursor - len(typed)] + text[cursor:], cursor - len(typed))
    tables = named_tables(catalogs, statement)
    found: list[Candidate] = []
    if qualifier:
        found += _qualified(catalogs, qualifier, tables)
    else:
        for alias, identifier in tables.items():
            found += [Candidate(_quoted(c), f"column of {alias}") for c in _columns(catalogs, identifier)]
        found += [Candidate(_quoted(t), "table") for t in _safe(catalogs.list_tables)]
        found += [Candidate(_quoted(d), "database") for d in _safe(catalogs.list_databases)]
        found += [Candidate(_quoted(c), "catalog") for c in catalogs.list_catalogs()]
        if not match.group(2).startswith("`"):  # a back-quote starts a name, never a keyword
            found += [Candidate(k, "keyword") for k in KEYWORDS]
    seen: set[str] = set()
    out = []
    for candidate in found:
        if candidate.text.lstrip("`").lower().startswith(partial) and candidate.text not in seen:
            seen.add(candidate.text)
            out.append(candidate)
    return out


def named_tables(catalogs: CatalogManager, tokens: list[Token]) -> dict[str, ObjectIdentifier]:
    """The tables and views ``tokens`` name, by the name the statement may qualify their columns with: the table's
    own name and, when one follows it, its alias."""
    found: dict[str, ObjectIdentifier] = {}
    i = 0
    while i < len(tokens):
        if not _is_name(tokens[i]):
            i += 1
            continue
        end = i + 1
        while end + 1 < len(tokens) and tokens[end].token_type == TokenType.DOT and _is_name(tokens[end + 1]):
            end += 2
        parts = tuple(t.text for t in tokens[i:end:2])
        identifier = _table(catalogs, parts)
        if identifier is not None:
            found.setdefault(parts[-1], identifier)
            alias = _alias(tokens, end)
            if alias:
                found[alias] = identifier
        i = end
    return found


def _qualified(catalogs: CatalogManager, qualifier: tuple[str, ...], tables: dict[str, ObjectIdentifier]
               ) -> list[Candidate]:
    found: list[Candidate] = []
    if len(qualifier) == 1 and qualifier[0] in tables:
        found += [Candidate(_quoted(c), f"column of {qualifier[0]}") for c in _columns(catalogs, tables[qualifier[0]])]
    if len(qualifier) == 1 and qualifier[0] in catalogs.list_catalogs():
        found += [Candidate(_quoted(d), "database") for d in _safe(catalogs.list_databases, qualifier[0])]
    if len(qualifier) == 1:
        found += [Candidate(_quoted(t), "table") for t in _safe(catalogs.list_tables, None, qualifier[0])]
    if len(qualifier) == 2:
        found += [Candidate(_quoted(t), "table") for t in _safe(catalogs.list_tables, *qualifier)]
    identifier = _table(catalogs, qualifier)
    if identifier is not None:
        found += [Candidate(_quoted(c), f"column of {qualifier[-1]}") for c in _columns(catalogs, identifier)]
    return found


def _statement_tokens(text: str, cursor: int) -> list[Token]:
    """The tokens of the statement the cursor is in (between the ``;`` around it)."""
    tokens = _tokens(text)
    before = [t for t in tokens if t.start < cursor]
    start = max((i + 1 for i, t in enumerate(before) if t.token_type == TokenType.SEMICOLON), default=0)
    end = next((i for i, t in enumerate(tokens) if i >= start and t.token_type == TokenType.SEMICOLON
                and t.start >= cursor), len(tokens))
    return tokens[start:end]


def _tokens(text: str) -> list[Token]:
    """Tokens up to where tokenizing fails (an open string or quote at the cursor is the common case)."""
    try:
        return _DIALECT.tokenize(text)
    except FlinkTokenError as error:
        return _tokens(text[: error.offset]) if 0 < error.offset < len(text) else []


def _is_name(token: Token) -> bool:
    return token.token_type in _NAME_TOKENS or (token.token_type != TokenType.STRING and token.text.isidentifier())


def _alias(tokens: list[Token], at: int) -> str | None:
    if at < len(tokens) and tokens[at].text.upper() == "AS":
        at += 1
    if at < len(tokens) and tokens[at].token_type in _NAME_TOKENS:
        return tokens[at].text
    return None


def _table(catalogs: CatalogManager, parts: tuple[str, ...]) -> ObjectIdentifier | None:
    if not 1 <= len(parts) <= 3:
        return None
    try:
        entry = catalogs.find_table(catalogs.qualify(parts))
    except PlanEngineError:
        return None
    return None if entry is None else entry.identifier


def _columns(catalogs: CatalogManager, identifier: ObjectIdentifier) -> list[str]:
    entry = catalogs.find_table(identifier)
    return [] if entry is None else entry.object.schema.column_names()


def _safe(listing, *args: str | None) -> Iterable[str]:  # type: ignore[no-untyped-def]
    try:
        return listing(*args)
    except (PlanEngineError, OSError):
        return ()


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip("`").replace("``", "`") for p in re.findall(r"`(?:[^`]|``)*`|[^.]+", dotted))


def _quoted(name: str) -> str:
    return name if _PLAIN_NAME.fullmatch(name) and name.upper() not in KEYWORDS else quote_identifier(name)
