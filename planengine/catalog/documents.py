"""Catalog objects as human-written YAML documents, and back.

The file catalog's format is meant to be written and reviewed by people, so it reads like the DDL it
stands for rather than like the plan JSON: one column per list item with its type as Flink SQL text,
``watermark``, ``primaryKey`` and ``partitionedBy`` by column name, options as a plain mapping. Writing
is deterministic (fixed key order; ``connector`` first, other options sorted) so a catalog can live in
git or a ConfigMap and diff cleanly. Reading validates everything and reports the file, line and field.

Derived facts are not written, and re-derived on read exactly as Flink's DDL does: the watermark column
is the rowtime attribute, ``PROCTIME()`` columns are processing-time attributes, and primary-key columns
are NOT NULL; a primary key's constraint name is only written when it is not Flink's ``PK_<cols>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from planengine.catalog import messages
from planengine.catalog.base import CatalogObject, ObjectKind, normalize_function_name
from planengine.catalog.objects import CatalogDatabase, CatalogFunction, CatalogTable, CatalogView
from planengine.catalog.secret_options import resolve_value
from planengine.catalog.yaml_io import FlowList, LineMapping
from planengine.errors import CatalogError, SourceLocation, ValidationError
from planengine.ir.schema import Column, PrimaryKey, ResolvedSchema, WatermarkSpec
from planengine.ir.types import DataType, TimeAttribute, parse_type

TABLE_KEYS = ("kind", "name", "comment", "columns", "watermark", "primaryKey", "primaryKeyName",
              "partitionedBy", "options")
VIEW_KEYS = ("kind", "name", "comment", "columns", "query")
FUNCTION_KEYS = ("kind", "name", "className", "language")
DATABASE_KEYS = ("kind", "comment", "properties")
COLUMN_KEYS = ("name", "type", "expression", "metadata", "comment")
METADATA_KEYS = ("from", "virtual")
WATERMARK_KEYS = ("column", "expression")


def default_primary_key_name(columns: tuple[str, ...]) -> str:
    """Flink's generated constraint name (``Schema.Builder#primaryKey``)."""
    return "PK_" + "_".join(columns)


def _is_proctime_call(expression: str | None) -> bool:
    return expression is not None and "".join(expression.split()).upper() == "PROCTIME()"


# --- writing -----------------------------------------------------------------------------------------
def to_document(name: str, obj: CatalogObject) -> dict[str, Any]:
    if isinstance(obj, CatalogTable):
        return table_to_document(name, obj)
    if isinstance(obj, CatalogView):
        return view_to_document(name, obj)
    return function_to_document(name, obj)


def table_to_document(name: str, table: CatalogTable) -> dict[str, Any]:
    schema = table.schema
    if len(schema.watermark_specs) > 1:
        raise CatalogError(f"table `{name}` has {len(schema.watermark_specs)} watermarks; Flink tables have one")
    rowtime = {w.rowtime_attribute for w in schema.watermark_specs}
    doc: dict[str, Any] = {"kind": "table", "name": name}
    if table.comment:
        doc["comment"] = table.comment
    doc["columns"] = [_column_to_document(c, c.name in rowtime) for c in schema.columns]
    for spec in schema.watermark_specs:
        doc["watermark"] = {"column": spec.rowtime_attribute, "expression": spec.expression}
    if schema.primary_key is not None:
        doc["primaryKey"] = FlowList(schema.primary_key.columns)
        if schema.primary_key.name != default_primary_key_name(schema.primary_key.columns):
            doc["primaryKeyName"] = schema.primary_key.name
    if table.partition_keys:
        doc["partitionedBy"] = FlowList(table.partition_keys)
    options = table.options_dict
    if options:
        ordered = sorted(options, key=lambda k: (k != "connector", k))
        doc["options"] = {k: options[k] for k in ordered}
    return doc


def _column_to_document(column: Column, is_rowtime: bool) -> dict[str, Any]:
    column_type = column.type
    if (is_rowtime and column_type.is_rowtime) or (column_type.is_proctime and _is_proctime_call(column.expression)):
        column_type = column_type.without_time_attribute()  # re-derived on read
    doc: dict[str, Any] = {"name": column.name, "type": str(column_type)}
    if column.kind == "computed":
        doc["expression"] = column.expression or ""
    elif column.kind == "metadata":
        if column.metadata_key is None and not column.virtual:
            doc["metadata"] = True
        else:
            metadata: dict[str, Any] = {}
            if column.metadata_key is not None:
                metadata["from"] = column.metadata_key
            if column.virtual:
                metadata["virtual"] = True
            doc["metadata"] = metadata
    if column.comment:
        doc["comment"] = column.comment
    return doc


def view_to_document(name: str, view: CatalogView) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": "view", "name": name}
    if view.comment:
        doc["comment"] = view.comment
    doc["columns"] = [_column_to_document(c, False) for c in view.schema.columns]
    doc["query"] = view.query
    return doc


def function_to_document(name: str, function: CatalogFunction) -> dict[str, Any]:
    return {"kind": "function", "name": name, "className": function.class_name, "language": function.language}


def database_to_document(database: CatalogDatabase) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": "database"}
    if database.comment:
        doc["comment"] = database.comment
    if database.properties:
        doc["properties"] = dict(database.properties)
    return doc


# --- reading -----------------------------------------------------------------------------------------
class DocumentReader:
    """Turns one parsed file into a catalog object; every complaint names the file and line."""

    def __init__(self, source: Path, environ: Mapping[str, str]):
        self.source = source
        self.environ = environ

    def fail(self, message: str, line: int | None, hint: str | None = None) -> NoReturn:
        raise CatalogError(message, location=SourceLocation(source=str(self.source), line=line), hint=hint)

    # --- entry points ------------------------------------------------------------------------------
    def read_object(self, doc: Any, kind: ObjectKind, name: str) -> CatalogObject:
        readers: dict[str, tuple[tuple[str, ...], Callable[[LineMapping], CatalogObject]]] = {
            "table": (TABLE_KEYS, self._table),
            "view": (VIEW_KEYS, self._view),
            "function": (FUNCTION_KEYS, self._function),
        }
        keys, read = readers[kind]
        mapping = self._top(doc, kind, keys)
        written = mapping.get("name")
        if written is not None:
            same = (normalize_function_name(str(written)) == name) if kind == "function" else str(written) == name
            if not same:
                self.fail(
                    f"the file declares name `{written}` but its file name says `{name}`",
                    mapping.line_of("name"),
                    hint="rename the file or fix `name` (the file name decides where the object lives)",
                )
        return read(mapping)

    def read_database(self, doc: Any) -> CatalogDatabase:
        if doc is None:
            return CatalogDatabase()
        mapping = self._top(doc, "database", DATABASE_KEYS)
        comment = self._optional_str(mapping, "comment")
        properties = self._string_mapping(mapping, "properties", resolve=False)
        return CatalogDatabase(comment=comment, properties=tuple(sorted(properties.items())))

    # --- objects -----------------------------------------------------------------------------------
    def _top(self, doc: Any, kind: str, keys: tuple[str, ...]) -> LineMapping:
        if not isinstance(doc, LineMapping):
            self.fail(f"expected a mapping describing a {kind} (`kind: {kind}`, …), found {_describe(doc)}", 1)
        self._check_keys(doc, keys, f"a {kind}")
        written_kind = doc.get("kind")
        if written_kind is not None and written_kind != kind:
            self.fail(
                f"`kind: {written_kind}` in a file the layout reserves for a {kind}",
                doc.line_of("kind"),
                hint=f"move the file to where {written_kind}s live, or set `kind: {kind}`",
            )
        return doc

    def _table(self, doc: LineMapping) -> CatalogTable:
        columns = self._columns(doc)
        names = [c.name for c in columns]
        watermarks: tuple[WatermarkSpec, ...] = ()
        if "watermark" in doc:
            wm = self._mapping(doc, "watermark", WATERMARK_KEYS)
            column = self._required_str(wm, "column")
            expression = self._required_str(wm, "expression")
            self._check_column(column, names, wm.line_of("column"), "watermark")
            watermarks = (WatermarkSpec(column, expression),)
        primary_key = None
        if "primaryKey" in doc:
            pk_columns = self._name_list(doc, "primaryKey", names)
            pk_name = self._optional_str(doc, "primaryKeyName") or default_primary_key_name(pk_columns)
            primary_key = PrimaryKey(pk_name, pk_columns)
        elif "primaryKeyName" in doc:
            self.fail("`primaryKeyName` without `primaryKey`", doc.line_of("primaryKeyName"))
        partition_keys = self._name_list(doc, "partitionedBy", names) if "partitionedBy" in doc else ()
        rowtime = {w.rowtime_attribute for w in watermarks}
        pk_set = set(primary_key.columns) if primary_key else set()
        derived = tuple(_derive(c, c.name in rowtime, c.name in pk_set) for c in columns)
        options = self._string_mapping(doc, "options", resolve=True)
        return CatalogTable(
            schema=ResolvedSchema(derived, watermarks, primary_key),
            options=tuple(sorted(options.items())),
            partition_keys=partition_keys,
            comment=self._optional_str(doc, "comment"),
        )

    def _view(self, doc: LineMapping) -> CatalogView:
        query = self._required_str(doc, "query")
        columns = self._columns(doc)
        for column in columns:
            if column.kind != "physical":
                self.fail(f"view column `{column.name}` cannot be computed or metadata", doc.line_of("columns"))
        return CatalogView(query=query, schema=ResolvedSchema(columns), comment=self._optional_str(doc, "comment"))

    def _function(self, doc: LineMapping) -> CatalogFunction:
        class_name = self._required_str(doc, "className")
        language = (self._optional_str(doc, "language") or "PYTHON").upper()
        if language != "PYTHON":
            self.fail(f"unsupported function language `{language}`", doc.line_of("language"),
                      hint="planengine runs Python functions: `language: PYTHON`")
        return CatalogFunction(class_name=class_name, language=language)

    # --- columns -----------------------------------------------------------------------------------
    def _columns(self, doc: LineMapping) -> tuple[Column, ...]:
        items = doc.get("columns")
        if not isinstance(items, list) or not items:
            self.fail(
                "`columns` must be a non-empty list", doc.line_of("columns"),
                hint="columns:\n    - name: id\n      type: BIGINT NOT NULL",
            )
        columns: list[Column] = []
        for index, item in enumerate(items, start=1):
            if not isinstance(item, LineMapping):
                self.fail(f"column {index} must be a mapping with `name` and `type`, found {_describe(item)}",
                          doc.line_of("columns"))
            columns.append(self._column(item, index))
        seen: set[str] = set()
        for column in columns:
            if column.name in seen:
                self.fail(f"column `{column.name}` is declared twice", doc.line_of("columns"))
            seen.add(column.name)
        return tuple(columns)

    def _column(self, item: LineMapping, index: int) -> Column:
        self._check_keys(item, COLUMN_KEYS, f"column {index}")
        name = self._required_str(item, "name")
        if "type" not in item:
            hint = "write e.g. `type: BIGINT NOT NULL`"
            if "expression" in item:
                hint = "computed columns need their result type too (the catalog stores resolved schemas)"
            self.fail(f"column `{name}` has no `type`", item.line, hint=hint)
        column_type = self._type(item, name)
        expression = self._optional_str(item, "expression")
        comment = self._optional_str(item, "comment")
        if "metadata" not in item:
            kind = "computed" if expression is not None else "physical"
            return Column(name, column_type, kind=kind, expression=expression, comment=comment)
        if expression is not None:
            self.fail(f"column `{name}` cannot be both computed (`expression`) and `metadata`", item.line)
        metadata = item["metadata"]
        key, virtual = None, False
        if isinstance(metadata, LineMapping):
            self._check_keys(metadata, METADATA_KEYS, f"the metadata of column `{name}`")
            key = self._optional_str(metadata, "from")
            virtual = self._bool(metadata, "virtual")
        elif metadata is not True:
            self.fail(f"`metadata` of column `{name}` must be `true` or a mapping with `from` / `virtual`",
                      item.line_of("metadata"))
        return Column(name, column_type, kind="metadata", metadata_key=key, virtual=virtual, comment=comment)

    def _type(self, item: LineMapping, name: str) -> DataType:
        text = item["type"]
        if not isinstance(text, str):
            self.fail(f"the type of column `{name}` must be a string like `BIGINT NOT NULL`, found {_describe(text)}",
                      item.line_of("type"))
        try:
            return parse_type(text)
        except ValidationError as e:
            self.fail(f"column `{name}`: {e.message}", item.line_of("type"), hint=e.hint)

    def _check_column(self, column: str, names: list[str], line: int, role: str) -> None:
        if column not in names:
            guess = messages.suggestion(column, names)
            extra = f"; did you mean `{guess}`?" if guess else ""
            self.fail(f"{role} column `{column}` is not a column of this table{extra}", line,
                      hint=f"columns: {messages.listing(names)}")

    # --- scalars -----------------------------------------------------------------------------------
    def _check_keys(self, mapping: LineMapping, allowed: tuple[str, ...], what: str) -> None:
        for key in mapping:
            if key not in allowed:
                guess = messages.suggestion(key, allowed)
                extra = f"; did you mean `{guess}`?" if guess else ""
                self.fail(f"unknown key `{key}` in {what}{extra}", mapping.line_of(key),
                          hint=f"allowed keys: {', '.join(allowed)}")

    def _mapping(self, doc: LineMapping, key: str, allowed: tuple[str, ...]) -> LineMapping:
        value = doc[key]
        if not isinstance(value, LineMapping):
            self.fail(f"`{key}` must be a mapping, found {_describe(value)}", doc.line_of(key))
        self._check_keys(value, allowed, f"`{key}`")
        return value

    def _required_str(self, doc: LineMapping, key: str) -> str:
        if key not in doc or doc[key] is None:
            self.fail(f"missing `{key}`", doc.line)
        return self._optional_str(doc, key) or ""

    def _optional_str(self, doc: LineMapping, key: str) -> str | None:
        value = doc.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(f"`{key}` must be a string, found {_describe(value)}", doc.line_of(key),
                      hint="quote the value")
        return value

    def _bool(self, doc: LineMapping, key: str) -> bool:
        value = doc.get(key, False)
        if not isinstance(value, bool):
            self.fail(f"`{key}` must be true or false, found {_describe(value)}", doc.line_of(key))
        return value

    def _name_list(self, doc: LineMapping, key: str, names: list[str]) -> tuple[str, ...]:
        value = doc[key]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            self.fail(f"`{key}` must be a list of column names like [id, region]", doc.line_of(key))
        for column in value:
            self._check_column(column, names, doc.line_of(key), f"`{key}`")
        return tuple(value)

    def _string_mapping(self, doc: LineMapping, key: str, resolve: bool) -> dict[str, str]:
        value = doc.get(key)
        if value is None:
            return {}
        if not isinstance(value, LineMapping):
            self.fail(f"`{key}` must be a mapping of string keys to values", doc.line_of(key))
        out: dict[str, str] = {}
        for k, v in value.items():
            line = value.line_of(k)
            text = scalar_text(v)
            if text is None:
                self.fail(f"{key} `{k}` must be a single value (quote it: '…'), found {_describe(v)}", line)
            if resolve:
                text = resolve_value(text, self.environ, on_missing=lambda var, k=k, line=line: self.fail(
                    f"option '{k}' refers to environment variable {var}, which is not set", line,
                    hint=f"set {var} in the environment of the process (on Kubernetes: env or envFrom a Secret)",
                ))
            out[k] = text
        return out


def _derive(column: Column, is_rowtime: bool, in_primary_key: bool) -> Column:
    column_type = column.type
    if is_rowtime and column_type.time_attribute is None:
        column_type = column_type.with_time_attribute(TimeAttribute.ROWTIME)
    if _is_proctime_call(column.expression) and column_type.time_attribute is None:
        column_type = column_type.with_time_attribute(TimeAttribute.PROCTIME)
    if in_primary_key:
        column_type = column_type.with_nullable(False)
    return column if column_type == column.type else replace(column, type=column_type)


def scalar_text(value: Any) -> str | None:
    """Option values are strings; numbers and booleans written bare in YAML are accepted as their text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"
