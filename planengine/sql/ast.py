"""Expression classes for the Flink constructs sqlglot has no node for.

The planner walks sqlglot trees; these classes give Flink-only syntax (window table functions, plan and
statement-set statements, SET/RESET, ...) a typed node with named args instead of an ``exp.Anonymous`` or
an opaque ``exp.Command``, so nothing downstream has to re-parse SQL text.

Where sqlglot already has a standard node, the dialect uses it instead of inventing one:

* ``FOR SYSTEM_TIME AS OF expr`` after a table: ``exp.Table`` arg ``version`` =
  ``exp.Version(this="TIMESTAMP", kind="AS OF", expression=expr)`` (sqlglot normalises ``SYSTEM_TIME`` to
  ``TIMESTAMP``); read it with :func:`planengine.sql.accessors.system_time_as_of`.
* Table hints ``/*+ OPTIONS('k'='v') */`` after a table name: ``exp.Table`` arg ``hints`` = ``[exp.Hint]``;
  read them with :func:`planengine.sql.accessors.table_options_hint`.
* Query hints ``SELECT /*+ STATE_TTL(...) */``: ``exp.Select`` arg ``hint`` (``exp.Hint``); read them with
  :func:`planengine.sql.accessors.query_hints`.
* ``CROSS JOIN UNNEST(arr) AS t (a, b)``: an ``exp.Join`` whose ``this`` is ``exp.Unnest`` with a
  ``TableAlias`` carrying the column names.
* Legacy group windows ``TUMBLE(ts, size)``, ``HOP(ts, slide, size)``, ``SESSION(ts, gap)`` and their
  auxiliary functions (``TUMBLE_START``, ``HOP_END``, ``SESSION_ROWTIME``, ...): ``exp.Anonymous`` with the
  upper-case function name in ``this`` and the arguments in ``expressions``.
* ``MULTISET<T>``: ``exp.DataType(this=DType.USERDEFINED, kind="MULTISET", expressions=[T], nested=True)``;
  ``ROW<a T>`` / ``ROW(a T)``: ``exp.DataType(this=DType.STRUCT, nested=True)`` with one ``exp.ColumnDef``
  per field; a nested ``T NOT NULL``: the ``DataType`` has ``nullable=False``.
"""

from __future__ import annotations

from sqlglot import exp

WINDOW_TVF_KINDS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")


class WindowTableFunction(exp.Expression):
    """A window table-valued function in FROM: ``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))``.

    Args:
        kind: "TUMBLE" | "HOP" | "CUMULATE" | "SESSION" (a plain ``str``).
        this: the input, an ``exp.Table`` (a table or a view name).
        time_col: the ``DESCRIPTOR`` column, an ``exp.Column``.
        size: window size (TUMBLE, HOP, CUMULATE), usually an ``exp.Interval``.
        slide: HOP slide. step: CUMULATE step. gap: SESSION gap. offset: optional window offset.
        partition_by: SESSION ``PARTITION BY`` columns (list of ``exp.Column``).
        alias: ``exp.TableAlias`` when written ``TABLE(...) AS w``.
        joins: joins attached when the function heads a parenthesised join tree.

    Named arguments (``DATA =>``, ``TIMECOL =>``, ``SIZE =>``, ...) and positional ones produce the same
    node, so the planner never sees how the user wrote the call.
    """

    arg_types = {
        "kind": True,
        "this": True,
        "time_col": True,
        "size": False,
        "slide": False,
        "step": False,
        "gap": False,
        "offset": False,
        "partition_by": False,
        "alias": False,
        "joins": False,
        "pivots": False,
    }

    @property
    def kind(self) -> str:
        return self.args["kind"]

    @property
    def alias(self) -> str:
        alias = self.args.get("alias")
        return alias.name if alias else ""


# ---- statements sqlglot parses only as opaque commands --------------------------------------------------


class SetOptionStatement(exp.Expression):
    """``SET 'k' = 'v'`` / ``SET k = v`` / ``SET``: ``this`` key and ``expression`` value are string
    literals (both absent for a bare SET, which lists the options)."""

    arg_types = {"this": False, "expression": False}


class ResetOptionStatement(exp.Expression):
    """``RESET 'k'`` / ``RESET``: ``this`` is the key as a string literal, absent to reset all."""

    arg_types = {"this": False}


class ShowStatement(exp.Expression):
    """``SHOW <kind> ...``: ``this`` is the upper-case kind (``str``): ``TABLES``, ``VIEWS``, ``FUNCTIONS``,
    ``USER FUNCTIONS``, ``CATALOGS``, ``DATABASES``, ``COLUMNS``, ``CREATE TABLE``, ``CREATE VIEW``,
    ``CURRENT CATALOG`` or ``CURRENT DATABASE``.

    ``target`` is the ``exp.Table`` a kind is about (``SHOW COLUMNS FROM t``, ``SHOW CREATE TABLE t``) or the
    database listed (``SHOW TABLES FROM db``); ``like`` the pattern literal of ``[NOT] LIKE 'p'`` (``not_like``)."""

    arg_types = {"this": True, "target": False, "like": False, "not_like": False}


class DescribeStatement(exp.Expression):
    """``DESCRIBE|DESC [EXTENDED] t``: ``this`` is the ``exp.Table``."""

    arg_types = {"this": True, "extended": False}


class AlterTableStatement(exp.Expression):
    """``ALTER TABLE [IF EXISTS] t <action>``; ``action`` (``str``) is one of

    * ``RENAME``: ``RENAME TO t2``, ``expression`` the new ``exp.Table``;
    * ``RENAME COLUMN``: ``RENAME a TO b``, ``expressions`` the two ``exp.Identifier``s;
    * ``SET``: ``SET ('k' = 'v', ...)``, ``expressions`` the ``exp.Property`` options;
    * ``RESET``: ``RESET ('k', ...)``, ``expressions`` the key literals;
    * ``ADD`` / ``MODIFY``: ``expressions`` the column definitions, ``WATERMARK`` and ``PRIMARY KEY`` elements
      (as in CREATE TABLE); a column's ``FIRST`` / ``AFTER col`` is its ``exp.ColumnDef`` arg ``position``;
    * ``DROP``: ``expressions`` the dropped column identifiers, or ``exp.var("PRIMARY KEY")`` /
      ``exp.var("WATERMARK")``.
    """

    arg_types = {"this": True, "action": True, "exists": False, "expression": False, "expressions": False}


class CreateCatalogStatement(exp.Expression):
    """``CREATE CATALOG c WITH (...)``: ``this`` identifier, ``expressions`` the ``exp.Property`` options."""

    arg_types = {"this": True, "expressions": False}


class CreateFunctionStatement(exp.Expression):
    """``CREATE [TEMPORARY] [SYSTEM] FUNCTION [IF NOT EXISTS] f AS 'cls' [LANGUAGE l]``.

    ``this`` is an ``exp.Table`` naming the function, ``expression`` the class-name string literal,
    ``language`` the upper-case language (``str``, absent when not written)."""

    arg_types = {
        "this": True,
        "expression": True,
        "temporary": False,
        "system": False,
        "exists": False,
        "language": False,
    }


class StatementSetBlock(exp.Expression):
    """``EXECUTE STATEMENT SET BEGIN ...; END`` or the legacy ``BEGIN STATEMENT SET; ...; END``.

    ``expressions`` holds the ``exp.Insert`` statements; ``legacy`` is True for the second form."""

    arg_types = {"expressions": True, "legacy": False}


class ExecuteStatement(exp.Expression):
    """``EXECUTE INSERT ...`` / ``EXECUTE STATEMENT SET ...``: ``this`` is the executed statement."""

    arg_types = {"this": True}


class CompilePlanStatement(exp.Expression):
    """``COMPILE PLAN 'p' [IF NOT EXISTS] FOR <insert | statement set>``; ``this`` the path literal,
    ``expression`` the body, ``exists`` for IF NOT EXISTS."""

    arg_types = {"this": True, "expression": True, "exists": False}


class CompileAndExecutePlanStatement(exp.Expression):
    """``COMPILE AND EXECUTE PLAN 'p' FOR <insert | statement set>``."""

    arg_types = {"this": True, "expression": True}


class ExecutePlanStatement(exp.Expression):
    """``EXECUTE PLAN 'p'``: ``this`` is the path literal."""

    arg_types = {"this": True}


class MigratePlanStatement(exp.Expression):
    """``COMPILE PLAN 'new' FROM 'old'``: ``this`` new path, ``expression`` old path (string literals)."""

    arg_types = {"this": True, "expression": True}


class ExplainStatement(exp.Expression):
    """``EXPLAIN [detail, ...] <stmt>`` (and ``EXPLAIN PLAN FOR <stmt>``): ``this`` is the explained
    statement, ``expressions`` the upper-case detail keywords as ``exp.Var``."""

    arg_types = {"this": True, "expressions": False}


class ExplainPlanStatement(exp.Expression):
    """``EXPLAIN PLAN 'p'``: ``this`` is the plan path literal."""

    arg_types = {"this": True}


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``c TYPE METADATA [FROM 'key'] [VIRTUAL]``: ``this`` the key literal (optional), ``virtual``."""

    arg_types = {"this": False, "virtual": False}
