"""Parsed sqlglot trees to the typed statements of :mod:`planengine.sql.statements`.

The parser keeps Flink syntax in sqlglot nodes (so it can be generated back); the catalog manager and the
planner want plain, frozen dataclasses. This module is the only place that knows both shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from planengine.errors import SourceLocation, SqlParseError
from planengine.sql import ast
from planengine.sql import statements as st
from planengine.sql.accessors import table_options_hint
from planengine.sql.errors import sql_error
from planengine.sql.positions import line_and_column
from planengine.sql.type_render import render_type


@dataclass(frozen=True)
class Origin:
    """Where the statement being converted came from, for locations and error messages."""

    script: str
    index: int
    start: int
    text: str
    source: str | None = None

    @property
    def location(self) -> SourceLocation:
        line, column = line_and_column(self.script, self.start)
        return SourceLocation(statement=self.index, line=line, column=column, source=self.source)

    def error(self, message: str, offset: int | None = None) -> SqlParseError:
        return sql_error(
            message, self.script, self.start if offset is None else offset, statement=self.index, source=self.source
        )

    def header(self) -> dict:
        return {"index": self.index, "location": self.location, "text": self.text}


def name_parts(node: exp.Expression) -> st.NameParts:
    if isinstance(node, exp.Schema):
        node = node.this
    if isinstance(node, exp.Table):
        return tuple(part.name for part in node.parts)
    return (node.name,)


def _options(properties: list[exp.Expression]) -> tuple[tuple[str, str], ...]:
    return tuple((prop.this.name, prop.args["value"].name) for prop in properties if type(prop) is exp.Property)


def _has_property(create: exp.Expression, kind: type[exp.Expression]) -> bool:
    properties = create.args.get("properties")
    return bool(properties and any(isinstance(p, kind) for p in properties.expressions))


def convert(node: exp.Expression, origin: Origin) -> st.Statement:
    """The typed statement for one parsed statement; raises SqlParseError for unsupported forms."""
    header = origin.header()
    if isinstance(node, ast.ExecuteStatement):
        return convert(node.this, origin)
    if isinstance(node, exp.Create):
        return _convert_create(node, origin)
    if isinstance(node, ast.CreateCatalogStatement):
        return st.CreateCatalog(**header, name=node.this.name, options=_options(node.expressions))
    if isinstance(node, ast.CreateFunctionStatement):
        return st.CreateFunction(
            **header,
            name=name_parts(node.this),
            class_name=node.expression.name,
            language=node.args.get("language") or "PYTHON",
            temporary=bool(node.args.get("temporary")),
            system=bool(node.args.get("system")),
            if_not_exists=bool(node.args.get("exists")),
        )
    if isinstance(node, exp.Use):
        kind = node.args.get("kind")
        if kind is not None and kind.name.upper() == "CATALOG":
            return st.UseCatalog(**header, name=node.this.name)
        return st.UseDatabase(**header, name=name_parts(node.this))
    if isinstance(node, exp.Drop):
        return _convert_drop(node, origin)
    if isinstance(node, ast.SetOptionStatement):
        key, value = node.args.get("this"), node.args.get("expression")
        return st.SetOption(**header, key=key.name if key else None, value=value.name if value else None)
    if isinstance(node, ast.ResetOptionStatement):
        key = node.args.get("this")
        return st.ResetOption(**header, key=key.name if key else None)
    if isinstance(node, exp.Insert):
        return _convert_insert(node, origin)
    if isinstance(node, ast.StatementSetBlock):
        return st.StatementSet(**header, inserts=tuple(_inner_insert(i, origin) for i in node.expressions))
    if isinstance(node, ast.CompilePlanStatement):
        return st.CompilePlan(
            **header,
            path=node.this.name,
            body=_plan_body(node.expression, origin),
            if_not_exists=bool(node.args.get("exists")),
        )
    if isinstance(node, ast.CompileAndExecutePlanStatement):
        return st.CompileAndExecutePlan(**header, path=node.this.name, body=_plan_body(node.expression, origin))
    if isinstance(node, ast.ExecutePlanStatement):
        return st.ExecutePlan(**header, path=node.this.name)
    if isinstance(node, ast.MigratePlanStatement):
        return st.MigratePlan(**header, new_path=node.this.name, old_path=node.expression.name)
    if isinstance(node, ast.ExplainStatement):
        details = tuple(detail.name for detail in node.expressions)
        return st.Explain(**header, body=convert(node.this, _nested(node.this, origin)), details=details)
    if isinstance(node, ast.ExplainPlanStatement):
        return st.ExplainPlan(**header, path=node.this.name)
    if isinstance(node, ast.ShowStatement):
        return _convert_show(node, origin)
    if isinstance(node, ast.DescribeStatement):
        return st.Describe(**header, name=name_parts(node.this))
    if isinstance(node, ast.AlterTableStatement):
        return _convert_alter(node, origin)
    if isinstance(node, exp.Query | exp.Values):
        return st.Query(**header, query=node)
    raise origin.error(f"unsupported statement: {node.key.upper()}")


def _convert_create(node: exp.Create, origin: Origin) -> st.Statement:
    header = origin.header()
    kind = str(node.args.get("kind") or "").upper()
    temporary = _has_property(node, exp.TemporaryProperty)
    exists = bool(node.args.get("exists"))
    if kind == "TABLE":
        if node.expression is not None:
            raise origin.error("CREATE TABLE ... AS SELECT is not supported; create the table, then INSERT")
        return _convert_create_table(node, origin, temporary, exists)
    if kind == "VIEW":
        if node.args.get("replace"):
            raise origin.error("CREATE OR REPLACE VIEW is not supported; DROP VIEW IF EXISTS, then CREATE VIEW")
        target = node.this
        columns = tuple(col.name for col in target.expressions) if isinstance(target, exp.Schema) else ()
        return st.CreateView(
            **header,
            name=name_parts(target),
            query=node.expression,
            column_names=columns,
            temporary=temporary,
            if_not_exists=exists,
        )
    if kind in ("DATABASE", "SCHEMA"):
        return st.CreateDatabase(**header, name=name_parts(node.this), if_not_exists=exists)
    raise origin.error(f"CREATE {kind} is not supported; expected TABLE, VIEW, FUNCTION, CATALOG or DATABASE")


def _convert_show(node: ast.ShowStatement, origin: Origin) -> st.Statement:
    header = origin.header()
    kind: str = node.this
    like = node.args.get("like")
    pattern = {"like": like.name if like is not None else None, "not_like": bool(node.args.get("not_like"))}
    target = node.args.get("target")
    if kind.startswith("CREATE "):
        return st.ShowCreate(**header, kind=kind.removeprefix("CREATE "), name=name_parts(target))
    if kind.startswith("CURRENT "):
        return st.ShowCurrent(**header, kind=kind.removeprefix("CURRENT "))
    if kind == "COLUMNS":
        return st.ShowColumns(**header, name=name_parts(target), **pattern)
    return st.Show(**header, kind=kind, database=name_parts(target) if target is not None else (), **pattern)


def _convert_alter(node: ast.AlterTableStatement, origin: Origin) -> st.AlterTable:
    action: str = node.args["action"]
    fields: dict = {}
    items = node.expressions
    if action == "RENAME":
        fields["new_name"] = name_parts(node.expression)
    elif action == "RENAME COLUMN":
        fields["column"], fields["new_column"] = items[0].name, items[1].name
    elif action == "SET":
        fields["options"] = _options(items)
    elif action == "RESET":
        fields["keys"] = tuple(item.name for item in items)
    elif action in ("ADD", "MODIFY"):
        columns, watermark, primary_key = _schema_elements(items, origin)
        fields.update(columns=tuple(columns), watermark=watermark, primary_key=primary_key)
    else:  # DROP
        names = [item.name for item in items]
        fields["drop_primary_key"] = names == ["PRIMARY KEY"] and isinstance(items[0], exp.Var)
        fields["drop_watermark"] = names == ["WATERMARK"] and isinstance(items[0], exp.Var)
        if not (fields["drop_primary_key"] or fields["drop_watermark"]):
            fields["keys"] = tuple(names)
    return st.AlterTable(**origin.header(), name=name_parts(node.this), action=action,
                         if_exists=bool(node.args.get("exists")), **fields)


def _schema_elements(
    elements: list[exp.Expression], origin: Origin
) -> tuple[list[st.ColumnDef], st.WatermarkDef | None, tuple[str, ...] | None]:
    """Columns, the watermark and the primary key of a CREATE TABLE column list (or an ALTER TABLE ADD)."""
    columns: list[st.ColumnDef] = []
    watermark = None
    primary_key: tuple[str, ...] | None = None
    for element in elements:
        if isinstance(element, exp.ColumnDef):
            column, is_key = _column(element, origin)
            columns.append(column)
            if is_key:
                primary_key = (column.name,)
        elif isinstance(element, exp.WatermarkColumnConstraint):
            if watermark is not None:
                raise origin.error("a table can declare only one WATERMARK")
            if element.this is None or element.expression is None:
                raise origin.error("WATERMARK needs a column and a strategy: WATERMARK FOR ts AS ts - INTERVAL '5' "
                                   "SECOND", _offset(element))
            watermark = st.WatermarkDef(column=element.this.name, expression=element.expression)
        elif isinstance(element, exp.PrimaryKey | exp.Constraint):
            key = element if isinstance(element, exp.PrimaryKey) else element.find(exp.PrimaryKey)
            if key is None:
                raise origin.error(f"unsupported table constraint: {element.sql('flink')}")
            if primary_key is not None:
                raise origin.error("a table can declare only one PRIMARY KEY")
            primary_key = tuple(part.name for part in key.expressions)
        else:
            raise origin.error(f"unsupported element in the column list: {element.sql('flink')}")
    return columns, watermark, primary_key


def _convert_create_table(node: exp.Create, origin: Origin, temporary: bool, exists: bool) -> st.CreateTable:
    schema = node.this
    elements = schema.expressions if isinstance(schema, exp.Schema) else []
    columns, watermark, primary_key = _schema_elements(elements, origin)
    placed = next((c for c in columns if c.position is not None), None)
    if placed is not None:
        raise origin.error(f"column '{placed.name}': FIRST / AFTER belong in ALTER TABLE ... ADD|MODIFY, not in "
                           "CREATE TABLE (columns are created in written order)")
    if exists and node.args.get("replace"):
        raise origin.error("CREATE OR REPLACE TABLE cannot have IF NOT EXISTS; use one of them")
    properties = node.args.get("properties")
    props = properties.expressions if properties else []
    comment = next((p.this.name for p in props if isinstance(p, exp.SchemaCommentProperty)), None)
    partitioned = next((p for p in props if isinstance(p, exp.PartitionedByProperty)), None)
    partitioned_by: tuple[str, ...] = ()
    if partitioned is not None:
        target = partitioned.this
        partitioned_by = tuple(e.name for e in (target.expressions if isinstance(target, exp.Schema) else [target]))
    return st.CreateTable(
        **origin.header(),
        name=name_parts(schema),
        columns=tuple(columns),
        watermark=watermark,
        primary_key=primary_key,
        partitioned_by=partitioned_by,
        options=_options(props),
        temporary=temporary,
        if_not_exists=exists,
        comment=comment,
        or_replace=bool(node.args.get("replace")),
    )


def _offset(node: exp.Expression) -> int | None:
    """Where ``node`` starts in the script, when the parser recorded it."""
    for candidate in (node, *node.find_all(exp.Identifier, exp.Literal)):
        start = (getattr(candidate, "meta", None) or {}).get("start")
        if start is not None:
            return int(start)
    return None


def _column(node: exp.ColumnDef, origin: Origin) -> tuple[st.ColumnDef, bool]:
    """A column definition, and whether it carries a column-level PRIMARY KEY."""
    for constraint in node.constraints:  # sqlglot keeps words it took for a dialect's constraint (IN, OUT) bare
        if not isinstance(constraint, exp.ColumnConstraint):
            raise origin.error(f"column '{node.name}': unexpected '{constraint.sql('flink')}'; a column is written "
                               "name TYPE [NOT NULL] [COMMENT '...'], name AS expression, or name TYPE METADATA",
                               _offset(node))
    kinds = [constraint.kind for constraint in node.constraints]
    computed = next((k for k in kinds if isinstance(k, exp.ComputedColumnConstraint)), None)
    metadata = next((k for k in kinds if isinstance(k, ast.MetadataColumnConstraint)), None)
    comment = next((k.this.name for k in kinds if isinstance(k, exp.CommentColumnConstraint)), None)
    not_null = any(isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null") for k in kinds)
    is_key = any(isinstance(k, exp.PrimaryKeyColumnConstraint) for k in kinds)
    type_text = None
    kind = node.args.get("kind")
    if computed is None and kind is None:
        raise origin.error(f"column '{node.name}' has no type", _offset(node))
    if computed is not None and computed.this is None:
        raise origin.error(f"computed column '{node.name}' has no expression; write {node.name} AS <expression>",
                           _offset(node))
    if computed is None and kind is not None:
        try:
            type_text = render_type(kind)
        except SqlParseError as error:
            raise origin.error(f"column '{node.name}': {error.message}", _offset(node)) from None
        if not_null and not type_text.endswith(" NOT NULL"):
            type_text += " NOT NULL"
    written = node.args.get("position")  # ALTER TABLE ... ADD c INT FIRST | AFTER b
    position = None
    if written is not None:
        first = str(written.args.get("position")).upper() == "FIRST"
        position = ("FIRST", None) if first else ("AFTER", written.this.name)
    column = st.ColumnDef(
        name=node.name,
        type_text=type_text,
        expression=computed.this if computed is not None else None,
        metadata_key=metadata.this.name if metadata is not None and metadata.this else None,
        is_metadata=metadata is not None,
        virtual=bool(metadata is not None and metadata.args.get("virtual")),
        comment=comment,
        position=position,
    )
    return column, is_key


def _convert_drop(node: exp.Drop, origin: Origin) -> st.Drop:
    kind = str(node.args.get("kind") or "").upper()
    if kind == "SCHEMA":
        kind = "DATABASE"
    if kind not in ("TABLE", "VIEW", "FUNCTION", "CATALOG", "DATABASE"):
        raise origin.error(f"DROP {kind} is not supported; expected TABLE, VIEW, FUNCTION, CATALOG or DATABASE")
    tables = node.args.get("tables") or [node.this]
    if len(tables) != 1:
        raise origin.error(f"DROP {kind} takes exactly one name")
    return st.Drop(
        **origin.header(),
        kind=kind,
        name=name_parts(tables[0]),
        if_exists=bool(node.args.get("exists")),
        temporary=bool(node.args.get("temporary")),
    )


def _convert_insert(node: exp.Insert, origin: Origin) -> st.Insert:
    target = node.this
    columns: tuple[str, ...] = ()
    if isinstance(target, exp.Schema):
        columns = tuple(col.name for col in target.expressions)
        target = target.this
    if not isinstance(target, exp.Table):
        raise origin.error("INSERT needs a table name as its target")
    if node.expression is None:
        raise origin.error("expected SELECT or VALUES after the INSERT target", origin.start + len(origin.text))
    partition = target.args.get("partition")
    static_partition: list[tuple[str, str]] = []
    for item in partition.expressions if partition is not None else []:
        if not isinstance(item, exp.EQ):
            raise origin.error("a static PARTITION spec needs key = 'value' pairs")
        static_partition.append((item.this.name, item.expression.name))
    return st.Insert(
        **origin.header(),
        table=name_parts(target),
        query=node.expression,
        overwrite=bool(node.args.get("overwrite")),
        columns=columns,
        static_partition=tuple(static_partition),
        options_hint=tuple(table_options_hint(target).items()),
    )


def _nested(node: exp.Expression, origin: Origin) -> Origin:
    """A statement nested in another (statement-set INSERT, EXPLAIN or plan body) keeps its own text and
    position, with the enclosing statement's number."""
    start, end = node.meta.get("span", (origin.start, origin.start + len(origin.text) - 1))
    return Origin(origin.script, origin.index, start, origin.script[start : end + 1], origin.source)


def _inner_insert(node: exp.Insert, origin: Origin) -> st.Insert:
    return _convert_insert(node, _nested(node, origin))


def _plan_body(node: exp.Expression, origin: Origin) -> st.Insert | st.StatementSet:
    body = convert(node, _nested(node, origin))
    assert isinstance(body, st.Insert | st.StatementSet)
    return body
