"""Flink type text in one normal form, for plans, schemas and generated SQL.

Compiled plans compare types as strings (``TIMESTAMP(3) NOT NULL``), so every spelling a user may write
(``VARCHAR`` vs ``STRING``, ``INTEGER`` vs ``INT``, ``TIMESTAMP`` vs ``TIMESTAMP(6)``) must render the
same. The rules follow Flink's ``LogicalType#asSerializableString`` defaults.
"""

from __future__ import annotations

from sqlglot import exp

from planengine.errors import SqlParseError

MAX_LENGTH = 2147483647  # Flink's STRING is VARCHAR(2147483647), BYTES is VARBINARY(2147483647)

D = exp.DType

_SIMPLE = {
    D.INT: "INT",
    D.BIGINT: "BIGINT",
    D.SMALLINT: "SMALLINT",
    D.TINYINT: "TINYINT",
    D.BOOLEAN: "BOOLEAN",
    D.FLOAT: "FLOAT",
    D.DOUBLE: "DOUBLE",
    D.DATE: "DATE",
    D.TEXT: "STRING",
    D.NULL: "NULL",
}
# type -> (Flink name, default precision/length when none is written)
_PRECISION_DEFAULTS = {
    D.TIMESTAMP: ("TIMESTAMP", 6),
    D.TIMESTAMPLTZ: ("TIMESTAMP_LTZ", 6),
    D.TIME: ("TIME", 0),
    D.CHAR: ("CHAR", 1),
    D.BINARY: ("BINARY", 1),
}


def _params(dt: exp.DataType) -> list[str]:
    return [param.name for param in dt.expressions]


def _render(dt: exp.DataType) -> str:
    kind = dt.this
    params = _params(dt) if not dt.args.get("nested") else []
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind in (D.DECIMAL, D.BIGDECIMAL):
        precision = params[0] if params else "10"
        scale = params[1] if len(params) > 1 else "0"
        return f"DECIMAL({precision}, {scale})"
    if kind == D.VARCHAR:
        return "STRING" if not params or params[0] == str(MAX_LENGTH) else f"VARCHAR({params[0]})"
    if kind == D.VARBINARY:
        return "BYTES" if not params or params[0] == str(MAX_LENGTH) else f"VARBINARY({params[0]})"
    if kind in _PRECISION_DEFAULTS:
        name, default = _PRECISION_DEFAULTS[kind]
        return f"{name}({params[0] if params else default})"
    if kind == D.ARRAY:
        (element,) = _type_arguments(dt, "ARRAY<element type>", 1)
        return f"ARRAY<{render_type(element)}>"
    if kind == D.MAP:
        key, value = _type_arguments(dt, "MAP<key type, value type>", 2)
        return f"MAP<{render_type(key)}, {render_type(value)}>"
    if kind == D.STRUCT:
        return f"ROW<{', '.join(_render_field(field) for field in dt.expressions)}>"
    if kind == D.USERDEFINED and str(dt.args.get("kind", "")).upper() == "MULTISET":
        (element,) = _type_arguments(dt, "MULTISET<element type>", 1)
        return f"MULTISET<{render_type(element)}>"
    if kind == D.USERDEFINED:
        return str(dt.args.get("kind"))
    return dt.sql()  # best effort for types Flink has no special spelling for (INTERVAL, ...)


def _type_arguments(dt: exp.DataType, spelling: str, count: int) -> list[exp.Expression]:
    """The type arguments of a collection type, which must number ``count`` (``MAP<STRING>`` is an error).

    >>> from planengine.sql import parse_type
    >>> render_type(parse_type("MAP<STRING>"))
    Traceback (most recent call last):
    ...
    planengine.errors.SqlParseError: MAP has 1 type argument; write MAP<key type, value type>
    """
    arguments = list(dt.expressions)
    if len(arguments) != count:
        raise SqlParseError(f"{spelling.split('<')[0]} has {len(arguments)} type argument"
                            f"{'s' if len(arguments) != 1 else ''}; write {spelling}")
    return arguments


def _render_field(field: exp.Expression) -> str:
    if isinstance(field, exp.ColumnDef):
        name = field.name.replace("`", "``")
        text = f"`{name}` {render_type(field.args['kind'])}"
        comment = field.find(exp.CommentColumnConstraint)
        if comment is not None:
            text += " '" + comment.this.name.replace("'", "''") + "'"
        return text
    return render_type(field) if isinstance(field, exp.DataType) else field.sql()


def render_type(dt: exp.DataType) -> str:
    """The Flink normal form of a parsed type, ``NOT NULL`` included when declared.

    >>> from planengine.sql import parse_type
    >>> render_type(parse_type("ROW<a INTEGER, b VARCHAR NOT NULL>"))
    'ROW<`a` INT, `b` STRING NOT NULL>'
    """
    text = _render(dt)
    return f"{text} NOT NULL" if dt.args.get("nullable") is False else text
