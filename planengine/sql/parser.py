"""Flink's grammar as an extension of sqlglot's parser.

sqlglot already parses most of Flink's query syntax; this module adds what it lacks: window table
functions, table hints after a table name, ``ROW``/``MULTISET`` types, Flink DDL details (watermarks,
metadata columns, ``NOT ENFORCED``, string-only ``WITH`` options) and the statements sqlglot only knows as
opaque commands (SET, RESET, SHOW, EXPLAIN, COMPILE/EXECUTE PLAN, statement sets). Errors are raised
immediately with the offending token attached, so :mod:`planengine.sql.errors` can report an exact
position; messages say what was expected.
"""

from __future__ import annotations

import difflib
import typing as t

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.parsers.base import BaseParser
from sqlglot.tokens import Token, TokenType

from planengine.sql import ast
from planengine.sql.positions import line_and_column
from planengine.sql.splitter import split_tokens

# Statement keywords a script may start with; anything else gets a "did you mean" error.
STATEMENT_KEYWORDS = (
    "SELECT",
    "WITH",
    "VALUES",
    "INSERT",
    "CREATE",
    "DROP",
    "USE",
    "SET",
    "RESET",
    "SHOW",
    "EXPLAIN",
    "COMPILE",
    "EXECUTE",
    "BEGIN",
    "DESCRIBE",
    "DESC",
    "ALTER",
)
SHOW_KINDS = ("TABLES", "VIEWS", "FUNCTIONS", "CATALOGS", "DATABASES")
# What SHOW may be followed by, for the error message.
SHOW_FORMS = ("TABLES", "VIEWS", "[USER] FUNCTIONS", "CATALOGS", "DATABASES", "COLUMNS FROM <table>",
              "CREATE TABLE|VIEW <name>", "CURRENT CATALOG|DATABASE")
ALTER_ACTIONS = ("RENAME", "SET", "RESET", "ADD", "MODIFY", "DROP")
EXPLAIN_DETAILS = ("ESTIMATED_COST", "CHANGELOG_MODE", "PLAN_ADVICE", "JSON_EXECUTION_PLAN")

# Window TVF parameters: positional order per kind, and the arg key each named parameter fills.
TVF_POSITIONAL = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE", "OFFSET"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}
TVF_REQUIRED = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "SIZE"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}
TVF_ARG_KEYS = {
    "DATA": "this",
    "TIMECOL": "time_col",
    "SIZE": "size",
    "SLIDE": "slide",
    "STEP": "step",
    "GAP": "gap",
    "OFFSET": "offset",
}


class FlinkParseError(ParseError):
    """A sqlglot ParseError that remembers the token it points at (for absolute positions)."""

    def __init__(self, message: str, token: Token | None, errors: list[dict[str, t.Any]] | None = None):
        super().__init__(message, errors)
        self.reason = message
        self.token = token
        self.at_end = False  # the input ended where more was expected: point just after `token`


def _found(token: Token | None) -> str:
    """How an error names the token it stopped at: quoted text, or "end of input"."""
    if not token:
        return "end of input"
    return f"'{token.text}'"


def _timestamp_unit(arg: exp.Expression | None) -> exp.Expression | None:
    """TIMESTAMPADD/DIFF take a bare time unit, which the generic parser reads as a column."""
    if isinstance(arg, exp.Column | exp.Var | exp.Identifier):
        return exp.var(arg.name.upper())
    return arg


def _build_timestampadd(args: list) -> exp.TimestampAdd:
    unit, amount, value = [*args, None, None, None][:3]
    return exp.TimestampAdd(this=value, expression=amount, unit=_timestamp_unit(unit))


def _build_timestampdiff(args: list) -> exp.TimestampDiff:
    unit, start, end = [*args, None, None, None][:3]
    return exp.TimestampDiff(this=end, expression=start, unit=_timestamp_unit(unit))


class FlinkParser(BaseParser):
    FUNCTIONS = {
        **BaseParser.FUNCTIONS,
        "TIMESTAMPADD": _build_timestampadd,
        "TIMESTAMPDIFF": _build_timestampdiff,
    }

    CONSTRAINT_PARSERS = {
        **BaseParser.CONSTRAINT_PARSERS,
        "WATERMARK": lambda self: self._parse_watermark(),
        "METADATA": lambda self: self._parse_metadata_column(),
    }
    # Flink columns take no `WITH (...)` options; without this, a missing ')' before the table's
    # WITH clause would be reported somewhere inside the options.
    CONSTRAINT_PARSERS.pop("WITH", None)
    SCHEMA_UNNAMED_CONSTRAINTS = {*BaseParser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}
    DROPPABLE = ("TABLE", "VIEW", "FUNCTION", "CATALOG", "DATABASE")

    def __init__(self, *args: t.Any, **kwargs: t.Any):
        super().__init__(*args, **kwargs)
        self._type_depth = 0
        self._paren_context: list[str] = []

    # ---- errors ------------------------------------------------------------------------------------

    def raise_error(self, message: str, token: Token | None = None) -> None:
        at_end = not token and not self._curr  # sqlglot's end-of-input token is falsy
        token = token or self._curr or self._prev
        message = self._friendly(message, None if at_end else token)
        error = FlinkParseError(
            message,
            token,
            [{"description": message, "line": token.line if token else None, "col": token.col if token else None}],
        )
        error.at_end = at_end
        raise error

    def _friendly(self, message: str, token: Token | None) -> str:
        """Reword sqlglot's generic messages as "what was expected" for Flink users."""
        found = _found(token)
        if message == "Invalid expression / Unexpected token":
            if self._starts_statement(token):
                return self._missing_semicolon(token)
            return f"missing ';' or unexpected {found}"
        if message == "Expecting )":
            where = f" after {self._paren_context[-1]}" if self._paren_context else ""
            return f"expected ')'{where}, found {found}"
        if message.startswith("Required keyword:"):
            return f"incomplete expression, found {found}"
        if message.startswith("Expected table name"):
            return f"expected a table name, found {found}"
        if message.startswith("Expecting "):
            return f"expected {message[len('Expecting ') :]}, found {found}"
        return message

    @staticmethod
    def _starts_statement(token: Token | None) -> bool:
        return token is not None and token.token_type != TokenType.STRING and token.text.upper() in STATEMENT_KEYWORDS

    def _missing_semicolon(self, token: Token) -> str:
        line, column = line_and_column(self.sql, token.start)
        return (f"missing ';' before line {line} column {column}: the statement before "
                f"'{token.text.upper()}' does not end with ';'")

    def _parse_as_command(self, start: Token) -> exp.Command:
        """sqlglot gives up on a statement it cannot finish and keeps its text as an opaque command, logging
        a warning. In a Flink script that stop at a statement keyword is almost always a missing ';' (the
        next statement ran into this one), so say exactly that; anything else becomes "unsupported
        statement" in ``_parse_statement``."""
        if self._curr is not start and self._starts_statement(self._curr):
            self.raise_error(self._missing_semicolon(self._curr), self._curr)
        return super()._parse_as_command(start)

    def _warn_unsupported(self) -> None:
        """No raw library warning on the terminal: every command this parser keeps becomes an error with a
        position (``_parse_statement``)."""

    def _match_r_paren(self, expression: exp.Expression | None = None) -> None:
        if not self._match(TokenType.R_PAREN, expression=expression):
            self.raise_error("Expecting )")

    def _expect(self, matched: t.Any, message: str) -> None:
        if not matched:
            self.raise_error(message)

    def _expect_string(self, what: str) -> exp.Literal:
        if not self._match(TokenType.STRING):
            self.raise_error(f"expected {what} as a quoted string, found {_found(self._curr)}")
        return exp.Literal.string(self._prev.text)

    # ---- chunking and statements ----------------------------------------------------------------

    def _parse(self, parse_method: t.Any, raw_tokens: list[Token], sql: str | None = None) -> list:
        """Chunk like the script splitter, so statement-set blocks keep their inner ';'."""
        self.reset()
        self.sql = sql or ""
        self._chunks = [list(chunk.tokens) for chunk in split_tokens(raw_tokens)] or [[]]
        return self._parse_batch_statements(parse_method=parse_method, sep_first_statement=False)

    def _parse_statement(self) -> exp.Expression | None:
        if not self._curr:
            return None
        word = self._curr.text.upper() if self._curr.token_type != TokenType.STRING else ""
        handler = self._FLINK_STATEMENTS.get(word)
        if handler is not None:
            self._advance()
            return handler(self)
        if word == "CREATE" and self._flink_create_ahead():
            self._advance()
            return self._parse_flink_create()
        if word == "DROP":
            return self._parse_flink_drop()
        if word == "USE" and not self._next:
            self.raise_error("expected CATALOG <name> or a database name after USE", self._curr)
        if word not in STATEMENT_KEYWORDS and self._curr.token_type != TokenType.L_PAREN:
            guess = difflib.get_close_matches(word, STATEMENT_KEYWORDS, n=1, cutoff=0.6)
            suggestion = f"; did you mean {guess[0]}?" if guess else ""
            self.raise_error(f"unknown statement '{self._curr.text}'{suggestion}")
        start = self._curr
        statement = super()._parse_statement()
        if isinstance(statement, exp.Command):
            self.raise_error(f"unsupported statement '{start.text.upper()} ...'", start)
        return statement

    def _parse_set_option(self) -> ast.SetOptionStatement:
        if not self._curr:
            return ast.SetOptionStatement()
        key = self._parse_option_word(stop=TokenType.EQ, what="an option key")
        self._expect(self._match(TokenType.EQ), f"expected '=' after the option key '{key.name}' in SET")
        value = self._parse_option_word(stop=None, what="an option value")
        return ast.SetOptionStatement(this=key, expression=value)

    def _parse_option_word(self, stop: TokenType | None, what: str) -> exp.Literal:
        """A quoted string, or (legacy Flink) the raw unquoted text up to ``stop``."""
        if self._match(TokenType.STRING):
            return exp.Literal.string(self._prev.text)
        first = self._curr
        while self._curr and self._curr.token_type != stop:
            self._advance()
        if first is None or first is self._curr:
            self.raise_error(f"expected {what}, found {_found(self._curr)}")
        return exp.Literal.string(self.sql[first.start : self._prev.end + 1])

    def _parse_reset_option(self) -> ast.ResetOptionStatement:
        if not self._curr:
            return ast.ResetOptionStatement()
        return ast.ResetOptionStatement(this=self._parse_option_word(stop=None, what="an option key"))

    def _parse_show(self) -> ast.ShowStatement:
        word = self._curr.text.upper() if self._curr else ""
        if word == "CREATE":
            self._advance()
            kind = self._curr.text.upper() if self._curr else ""
            if kind not in ("TABLE", "VIEW"):
                self.raise_error("expected TABLE or VIEW after SHOW CREATE")
            self._advance()
            return ast.ShowStatement(this=f"CREATE {kind}", target=self._parse_object_name(kind.lower()))
        if word == "CURRENT":
            self._advance()
            kind = self._curr.text.upper() if self._curr else ""
            if kind not in ("CATALOG", "DATABASE"):
                self.raise_error("expected CATALOG or DATABASE after SHOW CURRENT")
            self._advance()
            return ast.ShowStatement(this=f"CURRENT {kind}")
        if word == "COLUMNS":
            self._advance()
            self._expect(self._match(TokenType.FROM) or self._match(TokenType.IN),
                         "expected FROM <table> after SHOW COLUMNS")
            return self._parse_show_like(ast.ShowStatement(this="COLUMNS", target=self._parse_object_name("table")))
        if word == "USER":
            self._advance()
            self._expect(self._match_text_seq("FUNCTIONS"), "expected FUNCTIONS after SHOW USER")
            return self._parse_show_like(ast.ShowStatement(this="USER FUNCTIONS"))
        if word not in SHOW_KINDS:
            guess = difflib.get_close_matches(word, [*SHOW_KINDS, "COLUMNS"], n=1, cutoff=0.6) if word else []
            found = f"did you mean SHOW {guess[0]}? " if guess else ""
            self.raise_error(f"{found}expected {', '.join(SHOW_FORMS[:-1])} or {SHOW_FORMS[-1]} after SHOW")
        self._advance()
        show = ast.ShowStatement(this=word)
        if word in ("TABLES", "VIEWS", "FUNCTIONS") and (self._match(TokenType.FROM) or self._match(TokenType.IN)):
            show.set("target", self._parse_object_name("database"))
        return self._parse_show_like(show)

    def _parse_show_like(self, show: ast.ShowStatement) -> ast.ShowStatement:
        """``[NOT] LIKE 'pattern'`` after a SHOW listing (SQL LIKE: ``%`` and ``_``)."""
        not_like = self._match_text_seq("NOT", "LIKE")
        if not_like or self._match(TokenType.LIKE) or self._match(TokenType.ILIKE):
            show.set("like", self._expect_string("the LIKE pattern"))
            show.set("not_like", bool(not_like))
        return show

    def _parse_object_name(self, what: str) -> exp.Table:
        if not self._curr or self._curr.token_type in (TokenType.STRING, TokenType.SEMICOLON):
            self.raise_error(f"expected a {what} name, found {_found(self._curr)}")
        table = self._parse_table_parts()
        if not isinstance(table, exp.Table) or not table.name:
            self.raise_error(f"expected a {what} name, found {_found(self._curr)}")
        return table

    def _parse_describe(self) -> ast.DescribeStatement:
        extended = self._match_text_seq("EXTENDED")
        return ast.DescribeStatement(this=self._parse_object_name("table or view"), extended=extended)

    # ---- ALTER TABLE ---------------------------------------------------------------------------------------

    def _parse_alter_table(self) -> ast.AlterTableStatement:
        self._expect(self._match(TokenType.TABLE), f"expected TABLE after ALTER, found {_found(self._curr)} "
                     "(planengine alters tables; re-create a view with DROP VIEW and CREATE VIEW)")
        exists = self._match_text_seq("IF", "EXISTS")
        table = self._parse_object_name("table")
        word = self._curr.text.upper() if self._curr else ""
        if word not in ALTER_ACTIONS:
            self.raise_error(f"expected {', '.join(ALTER_ACTIONS[:-1])} or {ALTER_ACTIONS[-1]} after ALTER TABLE "
                             f"{table.name}, found {_found(self._curr)}")
        self._advance()
        alter = ast.AlterTableStatement(this=table, action=word, exists=exists)
        if word == "RENAME":
            if self._match_text_seq("TO"):
                alter.set("expression", self._parse_object_name("table"))
                return alter
            old = self._parse_id_var(any_token=False)
            self._expect(old, f"expected TO <new table name> or <column> TO <new column>, found {_found(self._curr)}")
            self._expect(self._match_text_seq("TO"), f"expected TO <new name> after RENAME {old.name if old else ''}")
            new = self._parse_id_var(any_token=False)
            self._expect(new, f"expected the new column name, found {_found(self._curr)}")
            alter.set("action", "RENAME COLUMN")
            alter.set("expressions", [old, new])
        elif word == "SET":
            self._expect(self._curr and self._curr.token_type == TokenType.L_PAREN,
                         "expected ('key' = 'value', ...) after ALTER TABLE ... SET")
            alter.set("expressions", self._parse_wrapped_properties())
        elif word == "RESET":
            self._expect(self._curr and self._curr.token_type == TokenType.L_PAREN,
                         "expected ('key', ...) after ALTER TABLE ... RESET")
            alter.set("expressions", self._parse_wrapped_csv(lambda: self._expect_string("an option key")))
        elif word in ("ADD", "MODIFY"):
            alter.set("expressions", self._parse_alter_elements(word))
        else:  # DROP
            alter.set("expressions", self._parse_alter_drop())
        return alter

    def _parse_alter_elements(self, action: str) -> list[exp.Expression]:
        """``ADD|MODIFY`` one element or a parenthesised list of them, as in CREATE TABLE's column list."""
        if self._curr and self._curr.token_type == TokenType.L_PAREN:
            schema = self._parse_schema()
            return list(schema.expressions) if isinstance(schema, exp.Schema) else []
        if self._match_text_seq("WATERMARK"):
            return [self._parse_watermark()]
        if self._match(TokenType.PRIMARY_KEY):
            return [self._parse_primary_key()]
        if self._match(TokenType.CONSTRAINT):
            self._parse_id_var(any_token=False)
            self._expect(self._match(TokenType.PRIMARY_KEY), "expected PRIMARY KEY after CONSTRAINT <name>")
            return [self._parse_primary_key()]
        column = self._parse_field_def()
        if not isinstance(column, exp.ColumnDef):
            self.raise_error(f"expected a column definition, WATERMARK or PRIMARY KEY after {action}")
        return [column]

    def _parse_alter_drop(self) -> list[exp.Expression]:
        if self._match(TokenType.PRIMARY_KEY):
            return [exp.var("PRIMARY KEY")]
        if self._match(TokenType.CONSTRAINT):
            self._parse_id_var(any_token=False)
            return [exp.var("PRIMARY KEY")]
        if self._match_text_seq("WATERMARK"):
            return [exp.var("WATERMARK")]
        if self._curr and self._curr.token_type == TokenType.L_PAREN:
            return self._parse_wrapped_csv(lambda: self._parse_id_var(any_token=False))
        column = self._parse_id_var(any_token=False)
        self._expect(column, f"expected a column, (columns), PRIMARY KEY or WATERMARK after DROP, found "
                             f"{_found(self._curr)}")
        return [column]

    def _parse_explain(self) -> exp.Expression:
        if self._match_text_seq("PLAN"):
            if self._match(TokenType.STRING):
                return ast.ExplainPlanStatement(this=exp.Literal.string(self._prev.text))
            self._expect(self._match(TokenType.FOR), "expected FOR <statement> or a plan path after EXPLAIN PLAN")
            return ast.ExplainStatement(this=self._parse_explained())
        details: list[exp.Expression] = []
        while self._curr and self._curr.text.upper() in EXPLAIN_DETAILS:
            details.append(exp.var(self._curr.text.upper()))
            self._advance()
            if not self._match(TokenType.COMMA):
                break
        return ast.ExplainStatement(this=self._parse_explained(), expressions=details or None)

    def _parse_explained(self) -> exp.Expression:
        return self._with_span(self._parse_explained_unmarked)

    def _parse_explained_unmarked(self) -> exp.Expression:
        if not self._curr:
            self.raise_error("expected a statement to explain")
        if self._match_text_seq("STATEMENT", "SET"):
            return self._parse_statement_set_block(legacy=False)
        statement = self._parse_statement()
        assert statement is not None
        return statement

    def _parse_compile(self) -> exp.Expression:
        if self._match_text_seq("AND", "EXECUTE", "PLAN"):
            path = self._expect_string("the plan path")
            self._expect(self._match(TokenType.FOR), "expected FOR after COMPILE AND EXECUTE PLAN '<path>'")
            return ast.CompileAndExecutePlanStatement(this=path, expression=self._parse_plan_body())
        self._expect(self._match_text_seq("PLAN"), "expected PLAN or AND EXECUTE PLAN after COMPILE")
        path = self._expect_string("the plan path")
        if self._match(TokenType.FROM):
            return ast.MigratePlanStatement(this=path, expression=self._expect_string("the old plan path"))
        exists = self._match_text_seq("IF", "NOT", "EXISTS")
        self._expect(self._match(TokenType.FOR), "expected FOR <insert | statement set> or FROM '<old plan>'")
        return ast.CompilePlanStatement(this=path, expression=self._parse_plan_body(), exists=exists)

    def _parse_plan_body(self) -> exp.Expression:
        return self._with_span(self._parse_plan_body_unmarked)

    def _with_span(self, parse: t.Callable[[], exp.Expression]) -> exp.Expression:
        """Record the source span of a nested statement, so it gets its own text and location."""
        start = self._curr
        node = parse()
        if start:
            node.meta["span"] = (start.start, self._prev.end)
        return node

    def _parse_plan_body_unmarked(self) -> exp.Expression:
        """What a plan is compiled from: an INSERT or a statement set (optionally prefixed by EXECUTE)."""
        self._match(TokenType.EXECUTE)
        if self._match_text_seq("STATEMENT", "SET"):
            return self._parse_statement_set_block(legacy=False)
        self._expect(self._match(TokenType.INSERT), "expected INSERT or STATEMENT SET")
        return self._parse_insert()

    def _parse_execute(self) -> exp.Expression:
        if self._match_text_seq("PLAN"):
            return ast.ExecutePlanStatement(this=self._expect_string("the plan path"))
        if self._match_text_seq("STATEMENT", "SET"):
            return ast.ExecuteStatement(this=self._parse_statement_set_block(legacy=False))
        self._expect(self._match(TokenType.INSERT), "expected INSERT, STATEMENT SET or PLAN after EXECUTE")
        return ast.ExecuteStatement(this=self._parse_insert())

    def _parse_begin(self) -> exp.Expression:
        self._expect(
            self._match_text_seq("STATEMENT", "SET"),
            "expected STATEMENT SET after BEGIN (Flink has no transactions)",
        )
        self._expect(self._match(TokenType.SEMICOLON), "expected ';' after BEGIN STATEMENT SET")
        return self._parse_statement_set_inserts(legacy=True)

    def _parse_statement_set_block(self, legacy: bool) -> ast.StatementSetBlock:
        self._expect(self._match(TokenType.BEGIN), "expected BEGIN after STATEMENT SET")
        return self._parse_statement_set_inserts(legacy=legacy)

    def _parse_statement_set_inserts(self, legacy: bool) -> ast.StatementSetBlock:
        inserts: list[exp.Expression] = []
        while True:
            while self._match(TokenType.SEMICOLON):
                pass
            if self._match(TokenType.END):
                break
            if not self._curr:
                self.raise_error("unbalanced BEGIN … END: statement set is not closed with END")
            if not self._match(TokenType.INSERT):
                self.raise_error(f"only INSERT statements are allowed in a statement set, found '{self._curr.text}'")
            start = self._prev
            insert = self._parse_insert()
            insert.meta["span"] = (start.start, self._prev.end)
            inserts.append(insert)
            if not self._match(TokenType.SEMICOLON) and not (self._curr and self._curr.token_type == TokenType.END):
                self.raise_error(f"missing ';' or unexpected {_found(self._curr)} in statement set")
        if not inserts:
            self.raise_error("a statement set needs at least one INSERT", self._prev)
        return ast.StatementSetBlock(expressions=inserts, legacy=legacy)

    _FLINK_STATEMENTS: t.ClassVar[dict[str, t.Callable[[FlinkParser], exp.Expression]]] = {
        "SET": _parse_set_option,
        "RESET": _parse_reset_option,
        "SHOW": _parse_show,
        "DESCRIBE": _parse_describe,
        "DESC": _parse_describe,
        "ALTER": _parse_alter_table,
        "EXPLAIN": _parse_explain,
        "COMPILE": _parse_compile,
        "EXECUTE": _parse_execute,
        "BEGIN": _parse_begin,
    }

    # ---- CREATE CATALOG / FUNCTION, DROP CATALOG ---------------------------------------------------

    def _flink_create_ahead(self) -> bool:
        words = [tok.text.upper() for tok in self._tokens[self._index + 1 : self._index + 4]]
        while words and words[0] in ("TEMPORARY", "SYSTEM"):
            words = words[1:]
        return bool(words) and words[0] in ("CATALOG", "FUNCTION")

    def _parse_flink_create(self) -> exp.Expression:
        if self._match_text_seq("CATALOG"):
            name = self._parse_id_var(any_token=False)
            self._expect(name, f"expected a catalog name, found {_found(self._curr)}")
            self._expect(self._match(TokenType.WITH), "expected WITH ('type' = '...') after the catalog name")
            return ast.CreateCatalogStatement(this=name, expressions=self._parse_wrapped_properties())
        temporary = self._match(TokenType.TEMPORARY)
        system = self._match_text_seq("SYSTEM")
        self._match(TokenType.FUNCTION)
        exists = self._match_text_seq("IF", "NOT", "EXISTS")
        name = self._parse_table_parts()
        self._expect(self._match(TokenType.ALIAS), "expected AS 'module.Class' after the function name")
        class_name = self._expect_string("the implementation class name")
        language = None
        if self._match_text_seq("LANGUAGE"):
            language = self._curr.text.upper() if self._curr else ""
            if language not in ("PYTHON", "JAVA", "SCALA"):
                self.raise_error("expected PYTHON, JAVA or SCALA after LANGUAGE")
            self._advance()
        return ast.CreateFunctionStatement(
            this=name,
            expression=class_name,
            temporary=temporary,
            system=system,
            exists=exists,
            language=language,
        )

    def _parse_flink_drop(self) -> exp.Expression | None:
        index = self._index
        self._advance()  # DROP
        temporary = self._match(TokenType.TEMPORARY)
        system = self._match_text_seq("SYSTEM")
        kind = self._curr.text.upper() if self._curr else ""
        if kind not in self.DROPPABLE:
            self.raise_error(f"expected {', '.join(self.DROPPABLE[:-1])} or {self.DROPPABLE[-1]} after DROP")
        if kind == "CATALOG":
            self._advance()
            return self._parse_drop_catalog()
        if system:  # DROP TEMPORARY SYSTEM FUNCTION, which sqlglot does not know
            self._advance()
            exists = self._match_text_seq("IF", "EXISTS")
            return exp.Drop(kind=kind, tables=[self._parse_table_parts()], exists=exists, temporary=temporary)
        self._retreat(index)
        return super()._parse_statement()

    def _parse_drop_catalog(self) -> exp.Drop:
        exists = self._match_text_seq("IF", "EXISTS")
        name = self._parse_id_var(any_token=False)
        self._expect(name, f"expected a catalog name, found {_found(self._curr)}")
        return exp.Drop(kind="CATALOG", tables=[exp.Table(this=name)], exists=exists)

    # ---- CREATE TABLE details ----------------------------------------------------------------------

    def _parse_schema(self, this: exp.Expression | None = None) -> exp.Expression | None:
        self._paren_context.append("column list")
        try:
            return super()._parse_schema(this=this)
        finally:
            self._paren_context.pop()

    def _parse_watermark(self) -> exp.WatermarkColumnConstraint:
        self._expect(self._match(TokenType.FOR), "expected FOR <column> after WATERMARK")
        column = self._parse_column()
        self._expect(self._match(TokenType.ALIAS), "expected AS <expression> after WATERMARK FOR <column>")
        return exp.WatermarkColumnConstraint(this=column, expression=self._parse_assignment())

    def _parse_metadata_column(self) -> ast.MetadataColumnConstraint:
        key = self._expect_string("the metadata key") if self._match(TokenType.FROM) else None
        return ast.MetadataColumnConstraint(this=key, virtual=self._match_text_seq("VIRTUAL"))

    def _parse_primary_key(self, *args: t.Any, **kwargs: t.Any) -> t.Any:
        primary = next(
            (tok for tok in reversed(self._tokens[: self._index]) if tok.text.upper() == "PRIMARY"), self._prev
        )
        key = super()._parse_primary_key(*args, **kwargs)
        options = [str(option).upper() for option in key.args.get("options") or []]
        if "NOT ENFORCED" not in options:
            self.raise_error(
                "PRIMARY KEY must be declared NOT ENFORCED: Flink does not own the data, so it cannot "
                "enforce the key (write PRIMARY KEY (...) NOT ENFORCED)",
                primary,
            )
        return key

    def _parse_wrapped_properties(self) -> list[exp.Expression]:
        """Flink's WITH options: only 'key' = 'value' pairs of string literals, in written order."""
        self._paren_context.append("the WITH options")
        try:
            return self._parse_wrapped_csv(self._parse_option_pair)
        finally:
            self._paren_context.pop()

    def _parse_option_pair(self) -> exp.Property:
        key = self._expect_string("an option key like 'connector'")
        self._expect(self._match(TokenType.EQ), f"expected '=' after option key '{key.name}'")
        if not self._match(TokenType.STRING):
            self.raise_error(f"the value of option '{key.name}' must be a quoted string, found {_found(self._curr)}")
        return exp.Property(this=key, value=exp.Literal.string(self._prev.text))

    # ---- types ---------------------------------------------------------------------------------------

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expression | None:
        word = self._curr.text.upper() if self._curr and self._curr.token_type != TokenType.STRING else ""
        follows = self._next.token_type if self._next else None
        if word == "ROW" and follows == TokenType.LT:
            return self._parse_nested_not_null(self._parse_row_type())
        if word == "ROW" and follows == TokenType.L_PAREN:  # or the ROW(1, 2) constructor
            row = self._try_parse(self._parse_row_type)
            if row is not None:
                return self._parse_nested_not_null(row)
        if word == "MULTISET" and follows == TokenType.LT:
            return self._parse_nested_not_null(self._parse_multiset_type())
        nested = bool(self._curr and self._curr.token_type in (TokenType.ARRAY, TokenType.MAP))
        self._type_depth += nested
        try:
            parsed = super()._parse_types(check_func, schema, allow_identifiers, with_collation)
        finally:
            self._type_depth -= nested
        return self._parse_nested_not_null(parsed) if self._type_depth else parsed

    def _parse_nested_not_null(self, parsed: exp.Expression | None) -> exp.Expression | None:
        """``ARRAY<INT NOT NULL>`` / ``ROW<a INT NOT NULL>``: record non-nullability on the type."""
        if isinstance(parsed, exp.DataType) and self._match_text_seq("NOT", "NULL"):
            parsed.set("nullable", False)
        return parsed

    def _parse_row_type(self) -> exp.DataType:
        self._advance()  # ROW
        closing = TokenType.GT if self._match(TokenType.LT) else TokenType.R_PAREN
        if closing == TokenType.R_PAREN:
            self._match(TokenType.L_PAREN)
        fields: list[exp.Expression] = []
        if not (self._curr and self._curr.token_type == closing):
            fields = self._parse_csv(self._parse_row_field)
        if not self._match(closing):
            self.raise_error(f"expected '{'>' if closing == TokenType.GT else ')'}' after ROW fields")
        return exp.DataType(this=exp.DType.STRUCT, expressions=fields, nested=True)

    def _parse_row_field(self) -> exp.ColumnDef:
        name = self._parse_id_var(any_token=True)
        if isinstance(name, exp.Identifier):
            name.set("quoted", True)  # field names are case-sensitive and always rendered quoted
        self._type_depth += 1
        try:
            kind = self._parse_types()
        finally:
            self._type_depth -= 1
        if not isinstance(kind, exp.DataType):
            self.raise_error("expected a type for the ROW field")
        field = exp.ColumnDef(this=name, kind=kind)
        if self._match(TokenType.STRING):  # field description
            field.set(
                "constraints",
                [exp.ColumnConstraint(kind=exp.CommentColumnConstraint(this=exp.Literal.string(self._prev.text)))],
            )
        return field

    def _parse_multiset_type(self) -> exp.DataType:
        self._advance(2)  # MULTISET <
        self._type_depth += 1
        try:
            element = self._parse_types()
        finally:
            self._type_depth -= 1
        if not self._match(TokenType.GT):
            self.raise_error("expected '>' after the MULTISET element type")
        return exp.DataType(this=exp.DType.USERDEFINED, kind="MULTISET", expressions=[element], nested=True)

    # ---- FROM items: window TVFs, table hints ----------------------------------------------------

    def _parse_table_hints(self) -> list[exp.Expression] | None:
        # Flink has no T-SQL `WITH (NOLOCK)` or MySQL index hints; its table hints are parsed
        # right after the table name (see _parse_table_parts).
        return None

    def _parse_table_parts(self, *args: t.Any, **kwargs: t.Any) -> t.Any:
        table = super()._parse_table_parts(*args, **kwargs)
        if isinstance(table, exp.Table) and self._match(TokenType.HINT):
            hint = self._hint_from_token(self._prev)
            self._prev_comments = []  # the hint text is not a comment for the next node
            # sqlglot's _parse_table later overwrites the `hints` arg; keep it aside until then.
            table.meta["flink_table_hints"] = [hint]
        return table

    def _hint_from_token(self, token: Token) -> exp.Hint:
        text = token.comments[0] if token.comments else token.text.removeprefix("/*+").removesuffix("*/")
        return self._checked_hint(exp.maybe_parse(text, into=exp.Hint, dialect=self.dialect), token)

    def _parse_hint(self) -> exp.Hint | None:
        hint = super()._parse_hint()
        return self._checked_hint(hint, self._prev) if hint is not None else None

    def _checked_hint(self, hint: exp.Expression, token: Token) -> exp.Hint:
        """sqlglot keeps a hint it cannot parse as its raw text (a string, not a node); Flink refuses it. Say so
        at the hint, instead of failing later on a string where a hint was expected."""
        if not isinstance(hint, exp.Hint) or not all(isinstance(item, exp.Expression) for item in hint.expressions):
            self.raise_error("malformed hint: expected /*+ NAME('key' = 'value', ...) */ or /*+ NAME(a, b) */ "
                             "with quoted keys and values", token)
        return t.cast(exp.Hint, hint)

    def _parse_table(self, *args: t.Any, **kwargs: t.Any) -> t.Any:
        schema = kwargs.get("schema", args[0] if args else False)
        if not schema and self._window_tvf_ahead():
            return self._parse_window_tvf(joins=kwargs.get("joins", False), alias_tokens=kwargs.get("alias_tokens"))
        result = super()._parse_table(*args, **kwargs)
        table = result.this if isinstance(result, exp.Schema) else result
        if isinstance(table, exp.Table) and "flink_table_hints" in table.meta:
            table.set("hints", table.meta.pop("flink_table_hints"))
        return result

    def _window_tvf_ahead(self) -> bool:
        ahead = self._tokens[self._index : self._index + 4]
        return (
            len(ahead) == 4
            and ahead[0].token_type == TokenType.TABLE
            and ahead[1].token_type == TokenType.L_PAREN
            and ahead[2].text.upper() in ast.WINDOW_TVF_KINDS
            and ahead[3].token_type == TokenType.L_PAREN
        )

    def _parse_window_tvf(self, joins: bool, alias_tokens: t.Any) -> ast.WindowTableFunction:
        self._advance(2)  # TABLE (
        kind_token = self._curr
        kind = kind_token.text.upper()
        self._advance(2)  # KIND (
        self._paren_context.append(f"the {kind} arguments")
        try:
            raw_args = self._parse_csv(self._parse_window_tvf_arg)
            self._match_r_paren()
        finally:
            self._paren_context.pop()
        self._paren_context.append("TABLE(...)")
        try:
            self._match_r_paren()
        finally:
            self._paren_context.pop()

        args: dict[str, t.Any] = {"kind": kind}
        positional = TVF_POSITIONAL[kind]
        position = 0
        for name, value, partition_by in raw_args:
            if name is None:
                if position >= len(positional):
                    self.raise_error(f"too many arguments for {kind}: expected {', '.join(positional)}", kind_token)
                name = positional[position]
                position += 1
            if name not in positional:
                self.raise_error(f"unknown argument '{name}' for {kind}; expected {', '.join(positional)}", kind_token)
            if name == "DATA" and not isinstance(value, exp.Table):
                self.raise_error(f"the DATA argument of {kind} must be TABLE <name>", kind_token)
            if name == "TIMECOL" and not isinstance(value, exp.Column):
                self.raise_error(f"the TIMECOL argument of {kind} must be DESCRIPTOR(<column>)", kind_token)
            args[TVF_ARG_KEYS[name]] = value
            if partition_by:
                args["partition_by"] = partition_by
        missing = [name for name in TVF_REQUIRED[kind] if TVF_ARG_KEYS[name] not in args]
        if missing:
            self.raise_error(f"{kind} is missing its {', '.join(missing)} argument", kind_token)

        tvf = ast.WindowTableFunction(**args)
        alias = self._parse_table_alias(alias_tokens=alias_tokens or self.TABLE_ALIAS_TOKENS)
        if alias:
            tvf.set("alias", alias)
        if joins:
            for join in self._parse_joins(alias_tokens=alias_tokens):
                tvf.append("joins", join)
        return tvf

    def _parse_window_tvf_arg(self) -> tuple[str | None, exp.Expression, list[exp.Expression]]:
        name = None
        if self._curr and self._next and self._next.token_type == TokenType.FARROW:
            name = self._curr.text.upper()
            self._advance(2)
        partition_by: list[exp.Expression] = []
        if self._match(TokenType.TABLE):
            value: exp.Expression = self._parse_table_parts()
            if self._match(TokenType.PARTITION_BY) or self._match_text_seq("PARTITION", "BY"):
                partition_by = self._parse_tvf_partition_columns()
        elif self._curr and self._curr.text.upper() == "DESCRIPTOR" and self._next.token_type == TokenType.L_PAREN:
            self._advance(2)
            value = self._parse_column()
            self._match_r_paren()
        else:
            value = self._parse_assignment()
            if value is None:
                self.raise_error(f"expected a window function argument, found {_found(self._curr)}")
        return name, value, partition_by

    def _parse_tvf_partition_columns(self) -> list[exp.Expression]:
        """``PARTITION BY (a, b)`` or ``PARTITION BY a, b`` (plain columns up to DESCRIPTOR/named args)."""
        if self._match(TokenType.L_PAREN):
            columns = self._parse_csv(self._parse_column)
            self._match_r_paren()
            return columns
        columns = [self._parse_column()]
        while (
            self._curr
            and self._curr.token_type == TokenType.COMMA
            and self._next
            and self._next.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
            and self._next.text.upper() != "DESCRIPTOR"
            and self._index + 2 < len(self._tokens)
            and self._tokens[self._index + 2].token_type in (TokenType.COMMA, TokenType.R_PAREN, TokenType.DOT)
        ):
            self._advance()
            columns.append(self._parse_column())
        return columns

    # ---- entry points for single queries / expressions ------------------------------------------

    def parse_scalar(self, raw_tokens: list[Token], sql: str) -> exp.Expression | None:
        """Parse exactly one scalar expression (computed column, watermark, test input)."""
        return self._parse(type(self)._parse_assignment, raw_tokens, sql)[0]

    def parse_type(self, raw_tokens: list[Token], sql: str) -> exp.Expression | None:
        """Parse exactly one type, ``NOT NULL`` included (``planengine.ir.types`` builds on this)."""
        return self._parse(type(self)._parse_type_statement, raw_tokens, sql)[0]

    def _parse_type_statement(self) -> exp.Expression | None:
        parsed = self._parse_types(allow_identifiers=False)
        if not isinstance(parsed, exp.DataType):
            self.raise_error(f"expected a type, found {_found(self._curr or self._prev)}")
        return self._parse_nested_not_null(parsed)
