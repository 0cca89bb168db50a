"""Flink SQL back from any tree the Flink parser produces.

The generated text is what EXPLAIN shows and what view definitions are stored as, so it must re-parse
to the same tree (round trip) and use Flink spellings: types via :func:`render_type`, ``IF``,
``TIMESTAMPADD``, ``FOR SYSTEM_TIME AS OF``, hints right after the table name, ``'k' = 'v'`` options.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.generator import Generator

from planengine.sql import ast
from planengine.sql.type_render import render_type


def _literal_sql(value: exp.Expression | None) -> str:
    return "'" + value.name.replace("'", "''") + "'" if value is not None else ""


class FlinkGenerator(Generator):
    INSERT_OVERWRITE = " OVERWRITE"
    QUERY_HINTS = True
    TABLE_HINTS = True

    PROPERTIES_LOCATION = {
        **Generator.PROPERTIES_LOCATION,
        exp.SchemaCommentProperty: exp.Properties.Location.POST_SCHEMA,
        exp.PartitionedByProperty: exp.Properties.Location.POST_SCHEMA,
        exp.Property: exp.Properties.Location.POST_WITH,
        exp.TemporaryProperty: exp.Properties.Location.POST_CREATE,
    }

    TRANSFORMS = {
        **Generator.TRANSFORMS,
        exp.SchemaCommentProperty: lambda self, e: f"COMMENT {self.sql(e, 'this')}",
        exp.PartitionedByProperty: lambda self, e: f"PARTITIONED BY {self.sql(e, 'this')}",
        exp.Array: lambda self, e: f"ARRAY[{self.expressions(e, flat=True)}]",
        exp.If: lambda self, e: self.func("IF", e.this, e.args.get("true"), e.args.get("false")),
        exp.TimestampAdd: lambda self, e: self.func("TIMESTAMPADD", e.args.get("unit"), e.expression, e.this),
        exp.TimestampDiff: lambda self, e: self.func("TIMESTAMPDIFF", e.args.get("unit"), e.expression, e.this),
        exp.WatermarkColumnConstraint: lambda self, e: (
            f"WATERMARK FOR {self.sql(e, 'this')} AS {self.sql(e, 'expression')}"
        ),
        ast.MetadataColumnConstraint: lambda self, e: (
            "METADATA"
            + (f" FROM {_literal_sql(e.this)}" if e.this else "")
            + (" VIRTUAL" if e.args.get("virtual") else "")
        ),
        ast.WindowTableFunction: lambda self, e: self.windowtablefunction_sql(e),
        ast.SetOptionStatement: lambda self, e: (
            f"SET {_literal_sql(e.this)} = {_literal_sql(e.expression)}" if e.this else "SET"
        ),
        ast.ResetOptionStatement: lambda self, e: f"RESET {_literal_sql(e.this)}" if e.this else "RESET",
        ast.ShowStatement: lambda self, e: self.showstatement_sql(e),
        ast.DescribeStatement: lambda self, e: (
            f"DESCRIBE {'EXTENDED ' if e.args.get('extended') else ''}{self.sql(e, 'this')}"
        ),
        ast.AlterTableStatement: lambda self, e: self.altertablestatement_sql(e),
        ast.CreateCatalogStatement: lambda self, e: (
            f"CREATE CATALOG {self.sql(e, 'this')} WITH ({self.expressions(e, flat=True)})"
        ),
        ast.CreateFunctionStatement: lambda self, e: self.createfunctionstatement_sql(e),
        ast.StatementSetBlock: lambda self, e: self.statementsetblock_sql(e),
        ast.ExecuteStatement: lambda self, e: f"EXECUTE {self.sql(e, 'this')}",
        ast.CompilePlanStatement: lambda self, e: (
            f"COMPILE PLAN {_literal_sql(e.this)}{' IF NOT EXISTS' if e.args.get('exists') else ''}"
            f" FOR {self.sql(e, 'expression')}"
        ),
        ast.CompileAndExecutePlanStatement: lambda self, e: (
            f"COMPILE AND EXECUTE PLAN {_literal_sql(e.this)} FOR {self.sql(e, 'expression')}"
        ),
        ast.ExecutePlanStatement: lambda self, e: f"EXECUTE PLAN {_literal_sql(e.this)}",
        ast.MigratePlanStatement: lambda self, e: (
            f"COMPILE PLAN {_literal_sql(e.this)} FROM {_literal_sql(e.expression)}"
        ),
        ast.ExplainStatement: lambda self, e: (
            "EXPLAIN " + (f"{self.expressions(e, flat=True)} " if e.expressions else "") + self.sql(e, "this")
        ),
        ast.ExplainPlanStatement: lambda self, e: f"EXPLAIN PLAN {_literal_sql(e.this)}",
    }

    def datatype_sql(self, expression: exp.DataType) -> str:
        return render_type(expression)

    def property_sql(self, expression: exp.Property) -> str:
        if type(expression) is exp.Property:
            return f"{_literal_sql(expression.this)} = {_literal_sql(expression.args.get('value'))}"
        return super().property_sql(expression)

    def version_sql(self, expression: exp.Version) -> str:
        if expression.name == "TIMESTAMP" and expression.text("kind") == "AS OF":
            return f"FOR SYSTEM_TIME AS OF {self.sql(expression, 'expression')}"
        return super().version_sql(expression)

    def trim_sql(self, expression: exp.Trim) -> str:
        position = expression.args.get("position")
        characters = self.sql(expression, "expression")
        if not position and not characters:
            return f"TRIM({self.sql(expression, 'this')})"
        prefix = " ".join(part for part in (position or "BOTH", characters) if part)
        return f"TRIM({prefix} FROM {self.sql(expression, 'this')})"

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        """Flink order: name, hints, partition, FOR SYSTEM_TIME AS OF, alias."""
        hints = expression.args.get("hints")
        if not hints:
            return super().table_sql(expression, sep)
        bare = expression.copy()
        bare.set("hints", None)
        for key in ("partition", "version", "alias", "joins", "pivots"):
            bare.set(key, None)
        text = super().table_sql(bare, sep)
        text += " " + " ".join(self.sql(hint).strip() for hint in hints)
        rest = expression.copy()
        for key in ("this", "db", "catalog", "hints"):
            rest.set(key, None)
        partition = self.sql(expression, "partition")
        version = self.sql(expression, "version")
        alias = self.sql(expression, "alias")
        text += f" {partition}" if partition else ""
        text += f" {version}" if version else ""
        text += f"{sep}{alias}" if alias else ""
        text += self.expressions(expression, key="pivots", sep="", flat=True)
        joins = self.expressions(expression, key="joins", sep="", flat=True)
        return text + joins

    def windowtablefunction_sql(self, expression: ast.WindowTableFunction) -> str:
        data = f"TABLE {self.sql(expression, 'this')}"
        partition_by = expression.args.get("partition_by")
        if partition_by:
            data += f" PARTITION BY ({', '.join(self.sql(column) for column in partition_by)})"
        args = [data, f"DESCRIPTOR({self.sql(expression, 'time_col')})"]
        order = {
            "TUMBLE": ("size", "offset"),
            "HOP": ("slide", "size", "offset"),
            "CUMULATE": ("step", "size", "offset"),
            "SESSION": ("gap",),
        }[expression.kind]
        args += [self.sql(expression, key) for key in order if expression.args.get(key)]
        text = f"TABLE({expression.kind}({', '.join(args)}))"
        alias = self.sql(expression, "alias")
        text += f" AS {alias}" if alias else ""
        return text + self.expressions(expression, key="joins", sep="", flat=True)

    def createfunctionstatement_sql(self, expression: ast.CreateFunctionStatement) -> str:
        parts = ["CREATE"]
        parts += ["TEMPORARY"] if expression.args.get("temporary") else []
        parts += ["SYSTEM"] if expression.args.get("system") else []
        parts += ["FUNCTION"]
        parts += ["IF NOT EXISTS"] if expression.args.get("exists") else []
        parts += [self.sql(expression, "this"), "AS", _literal_sql(expression.expression)]
        language = expression.args.get("language")
        parts += [f"LANGUAGE {language}"] if language else []
        return " ".join(parts)

    def showstatement_sql(self, expression: ast.ShowStatement) -> str:
        kind: str = expression.this
        text = f"SHOW {kind}"
        target = expression.args.get("target")
        if target is not None:
            text += f" {'FROM ' if kind in ('COLUMNS', 'TABLES', 'VIEWS', 'FUNCTIONS') else ''}{self.sql(target)}"
        like = expression.args.get("like")
        if like is not None:
            text += f" {'NOT ' if expression.args.get('not_like') else ''}LIKE {_literal_sql(like)}"
        return text

    def altertablestatement_sql(self, expression: ast.AlterTableStatement) -> str:
        action: str = expression.args["action"]
        head = f"ALTER TABLE {'IF EXISTS ' if expression.args.get('exists') else ''}{self.sql(expression, 'this')}"
        items = expression.expressions
        if action == "RENAME":
            return f"{head} RENAME TO {self.sql(expression, 'expression')}"
        if action == "RENAME COLUMN":
            return f"{head} RENAME {self.sql(items[0])} TO {self.sql(items[1])}"
        if action == "SET":
            return f"{head} SET ({self.expressions(expression, flat=True)})"
        if action == "RESET":
            return f"{head} RESET ({', '.join(_literal_sql(item) for item in items)})"
        if action == "DROP" and len(items) == 1 and isinstance(items[0], exp.Var):
            return f"{head} DROP {items[0].name}"
        return f"{head} {action} ({self.expressions(expression, flat=True)})"

    def statementsetblock_sql(self, expression: ast.StatementSetBlock) -> str:
        inserts = "".join(f"{self.sql(insert)}; " for insert in expression.expressions)
        if expression.args.get("legacy"):
            return f"BEGIN STATEMENT SET; {inserts}END"
        return f"STATEMENT SET BEGIN {inserts}END"
