"""Typed statements: what the SQL front end hands to the catalog manager and the planner.

Queries stay sqlglot expressions (parsed with the Flink dialect in ``planengine.sql.dialect``); everything
around them (DDL, SET, statement sets, plan statements) becomes one of these frozen dataclasses, so the
planner never re-inspects raw SQL text. Every statement knows its 1-based number and location in the script
for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from planengine.errors import SourceLocation

# A possibly partial object identifier as written: ("t",), ("db", "t") or ("cat", "db", "t").
NameParts = tuple[str, ...]


@dataclass(frozen=True)
class Statement:
    index: int  # 1-based statement number in the script
    location: SourceLocation
    text: str  # the statement's source text, without the trailing ';'


@dataclass(frozen=True)
class ColumnDef:
    name: str
    # Physical and metadata columns: the Flink type as written, e.g. "DECIMAL(10, 2) NOT NULL",
    # "ROW<a INT, b STRING>"; parsed by planengine.ir.types.parse_type. None for computed columns.
    type_text: str | None
    # Computed column `c AS expr`: the expression (Flink dialect). None for physical columns.
    expression: exp.Expression | None = None
    # `c TYPE METADATA [FROM 'key'] [VIRTUAL]`
    metadata_key: str | None = None
    is_metadata: bool = False
    virtual: bool = False
    comment: str | None = None
    # ALTER TABLE ... ADD|MODIFY: ("FIRST", None) or ("AFTER", column); None keeps the place (MODIFY) or appends
    position: tuple[str, str | None] | None = None


@dataclass(frozen=True)
class WatermarkDef:
    column: str
    expression: exp.Expression


@dataclass(frozen=True)
class CreateTable(Statement):
    name: NameParts
    columns: tuple[ColumnDef, ...]
    watermark: WatermarkDef | None
    primary_key: tuple[str, ...] | None
    partitioned_by: tuple[str, ...]
    options: tuple[tuple[str, str], ...]  # WITH ('k' = 'v', ...) in written order
    temporary: bool = False
    if_not_exists: bool = False
    comment: str | None = None
    or_replace: bool = False  # CREATE OR REPLACE TABLE: replace an existing table of the same name


@dataclass(frozen=True)
class CreateView(Statement):
    name: NameParts
    query: exp.Expression
    column_names: tuple[str, ...] = ()
    temporary: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateFunction(Statement):
    name: NameParts
    class_name: str  # 'pkg.module.Class' (or 'pkg.module.function')
    language: str = "PYTHON"
    temporary: bool = False
    system: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateCatalog(Statement):
    name: str
    options: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CreateDatabase(Statement):
    name: NameParts
    if_not_exists: bool = False


@dataclass(frozen=True)
class UseCatalog(Statement):
    name: str


@dataclass(frozen=True)
class UseDatabase(Statement):
    name: NameParts


@dataclass(frozen=True)
class Drop(Statement):
    kind: str  # TABLE | VIEW | FUNCTION | CATALOG | DATABASE
    name: NameParts
    if_exists: bool = False
    temporary: bool = False


@dataclass(frozen=True)
class SetOption(Statement):
    key: str | None  # None: plain `SET` lists the options
    value: str | None


@dataclass(frozen=True)
class ResetOption(Statement):
    key: str | None  # None: reset all


@dataclass(frozen=True)
class Insert(Statement):
    table: NameParts
    query: exp.Expression
    overwrite: bool = False
    columns: tuple[str, ...] = ()  # INSERT INTO t (a, b) SELECT ...
    static_partition: tuple[tuple[str, str], ...] = ()  # PARTITION (k = 'v')
    # /*+ OPTIONS('k' = 'v') */ on the target table
    options_hint: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class StatementSet(Statement):
    inserts: tuple[Insert, ...]


@dataclass(frozen=True)
class Query(Statement):
    """A bare SELECT / VALUES / UNION at top level (EXPLAIN target, or an interactive query)."""

    query: exp.Expression


@dataclass(frozen=True)
class CompilePlan(Statement):
    path: str
    body: Insert | StatementSet
    if_not_exists: bool = False


@dataclass(frozen=True)
class CompileAndExecutePlan(Statement):
    path: str
    body: Insert | StatementSet


@dataclass(frozen=True)
class ExecutePlan(Statement):
    path: str


@dataclass(frozen=True)
class MigratePlan(Statement):
    """`COMPILE PLAN 'new' FROM 'old'`."""

    new_path: str
    old_path: str


@dataclass(frozen=True)
class Explain(Statement):
    body: Statement
    # Upper-cased detail keywords: ESTIMATED_COST, CHANGELOG_MODE, PLAN_ADVICE, JSON_EXECUTION_PLAN
    details: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class ExplainPlan(Statement):
    path: str


@dataclass(frozen=True)
class Show(Statement):
    kind: str  # TABLES | VIEWS | FUNCTIONS | USER FUNCTIONS | CATALOGS | DATABASES
    database: NameParts = ()  # SHOW TABLES FROM [catalog.]database
    like: str | None = None  # [NOT] LIKE 'pattern' (SQL LIKE: % and _)
    not_like: bool = False


@dataclass(frozen=True)
class ShowColumns(Statement):
    """``SHOW COLUMNS FROM t [[NOT] LIKE 'p']``: DESCRIBE's table, filtered by column name."""

    name: NameParts
    like: str | None = None
    not_like: bool = False


@dataclass(frozen=True)
class ShowCreate(Statement):
    kind: str  # TABLE | VIEW
    name: NameParts


@dataclass(frozen=True)
class ShowCurrent(Statement):
    kind: str  # CATALOG | DATABASE


@dataclass(frozen=True)
class Describe(Statement):
    name: NameParts


@dataclass(frozen=True)
class AlterTable(Statement):
    """``ALTER TABLE [IF EXISTS] t <action>``; the fields used depend on the action:

    * ``RENAME``: ``new_name``; ``RENAME COLUMN``: ``column`` to ``new_column``;
    * ``SET``: ``options``; ``RESET``: ``keys``;
    * ``ADD`` / ``MODIFY``: ``columns`` (each with its ``position``), ``watermark``, ``primary_key``;
    * ``DROP``: ``keys`` (column names), or ``drop_primary_key`` / ``drop_watermark``.
    """

    name: NameParts
    action: str  # RENAME | RENAME COLUMN | SET | RESET | ADD | MODIFY | DROP
    if_exists: bool = False
    new_name: NameParts = ()
    column: str | None = None
    new_column: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    keys: tuple[str, ...] = ()
    columns: tuple[ColumnDef, ...] = ()
    watermark: WatermarkDef | None = None
    primary_key: tuple[str, ...] | None = None
    drop_primary_key: bool = False
    drop_watermark: bool = False
