"""Flink's type inference rules, as a table: function, operand types -> result type (or error)."""

from __future__ import annotations

import pytest

from planengine.errors import ValidationError
from planengine.functions.defaults import default_registry
from planengine.functions.registry import NO_LITERAL, CallContext
from planengine.ir.types import parse_type

# (function, operand types, literals per operand or None, target type or None, expected result)
INFERENCE = [
    ("+", ["INT NOT NULL", "INT NOT NULL"], None, None, "INT NOT NULL"),
    ("+", ["INT", "INT NOT NULL"], None, None, "INT"),
    ("+", ["INT NOT NULL", "BIGINT NOT NULL"], None, None, "BIGINT NOT NULL"),
    ("+", ["TINYINT", "TINYINT"], None, None, "TINYINT"),
    ("+", ["DECIMAL(10, 2)", "DECIMAL(5, 4)"], None, None, "DECIMAL(13, 4)"),
    ("+", ["DECIMAL(38, 2)", "DECIMAL(38, 2)"], None, None, "DECIMAL(38, 2)"),
    ("+", ["INT", "DECIMAL(5, 2)"], None, None, "DECIMAL(13, 2)"),
    ("+", ["INT", "DOUBLE"], None, None, "DOUBLE"),
    ("+", ["FLOAT", "INT"], None, None, "FLOAT"),
    ("+", ["DECIMAL(5, 2)", "FLOAT"], None, None, "DOUBLE"),
    ("+", ["TIMESTAMP(3)", "INTERVAL SECOND(3) NOT NULL"], None, None, "TIMESTAMP(3)"),
    ("+", ["TIMESTAMP(3) *ROWTIME*", "INTERVAL SECOND(3) NOT NULL"], None, None, "TIMESTAMP(3)"),
    ("-", ["DATE NOT NULL", "INTERVAL MONTH NOT NULL"], None, None, "DATE NOT NULL"),
    ("*", ["DECIMAL(10, 2)", "DECIMAL(10, 2)"], None, None, "DECIMAL(21, 4)"),
    ("*", ["DECIMAL(38, 10)", "DECIMAL(38, 10)"], None, None, "DECIMAL(38, 6)"),
    ("/", ["INT NOT NULL", "INT NOT NULL"], None, None, "INT NOT NULL"),
    ("/", ["BIGINT", "INT"], None, None, "BIGINT"),
    ("/", ["DECIMAL(10, 2)", "DECIMAL(5, 1)"], None, None, "DECIMAL(17, 8)"),
    ("/", ["DOUBLE", "INT"], None, None, "DOUBLE"),
    ("%", ["BIGINT", "INT"], None, None, "INT"),
    ("MOD", ["INT NOT NULL", "BIGINT NOT NULL"], None, None, "BIGINT NOT NULL"),
    ("%", ["DECIMAL(10, 2)", "DECIMAL(5, 1)"], None, None, "DECIMAL(6, 2)"),
    ("NEGATE", ["DECIMAL(5, 1) NOT NULL"], None, None, "DECIMAL(5, 1) NOT NULL"),
    ("=", ["INT", "INT NOT NULL"], None, None, "BOOLEAN"),
    ("<", ["STRING NOT NULL", "CHAR(2) NOT NULL"], None, None, "BOOLEAN NOT NULL"),
    ("IS DISTINCT FROM", ["INT", "INT"], None, None, "BOOLEAN NOT NULL"),
    ("IS NULL", ["INT"], None, None, "BOOLEAN NOT NULL"),
    ("IS NOT TRUE", ["BOOLEAN"], None, None, "BOOLEAN NOT NULL"),
    ("AND", ["BOOLEAN NOT NULL", "BOOLEAN NOT NULL", "BOOLEAN"], None, None, "BOOLEAN"),
    ("LIKE", ["STRING NOT NULL", "CHAR(2) NOT NULL"], None, None, "BOOLEAN NOT NULL"),
    ("IN", ["INT", "INT NOT NULL", "INT NOT NULL"], None, None, "BOOLEAN"),
    ("BETWEEN", ["DATE NOT NULL", "DATE NOT NULL", "DATE NOT NULL"], None, None, "BOOLEAN NOT NULL"),
    ("CASE", ["BOOLEAN", "CHAR(1) NOT NULL", "CHAR(3) NOT NULL"], None, None, "VARCHAR(3) NOT NULL"),
    ("CASE", ["BOOLEAN", "INT NOT NULL", "NULL"], None, None, "INT"),
    ("COALESCE", ["INT", "BIGINT NOT NULL"], None, None, "BIGINT NOT NULL"),
    ("COALESCE", ["INT", "INT"], None, None, "INT"),
    ("IFNULL", ["STRING", "STRING NOT NULL"], None, None, "STRING NOT NULL"),
    ("NULLIF", ["INT NOT NULL", "INT NOT NULL"], None, None, "INT"),
    ("IF", ["BOOLEAN", "INT NOT NULL", "DOUBLE NOT NULL"], None, None, "DOUBLE NOT NULL"),
    ("GREATEST", ["INT NOT NULL", "BIGINT"], None, None, "BIGINT"),
    ("LEAST", ["DECIMAL(5, 2) NOT NULL", "INT NOT NULL"], None, None, "DECIMAL(12, 2) NOT NULL"),
    ("CAST", ["STRING NOT NULL"], None, "INT", "INT NOT NULL"),
    ("CAST", ["STRING"], None, "INT NOT NULL", "INT"),
    ("TRY_CAST", ["STRING NOT NULL"], None, "INT", "INT"),
    (
        "REINTERPRET",
        ["TIMESTAMP(3) NOT NULL"],
        None,
        "TIMESTAMP(3) NOT NULL *ROWTIME*",
        "TIMESTAMP(3) NOT NULL *ROWTIME*",
    ),
    ("||", ["CHAR(2) NOT NULL", "STRING NOT NULL"], None, None, "STRING NOT NULL"),
    ("CONCAT", ["CHAR(2) NOT NULL", "STRING"], None, None, "STRING"),
    ("CONCAT_WS", ["CHAR(1) NOT NULL", "STRING", "STRING"], None, None, "STRING NOT NULL"),
    ("UPPER", ["CHAR(2) NOT NULL"], None, None, "CHAR(2) NOT NULL"),
    ("LOWER", ["STRING"], None, None, "STRING"),
    ("INITCAP", ["STRING"], None, None, "STRING"),
    (
        "TRIM",
        ["STRING NOT NULL", "CHAR(1) NOT NULL", "CHAR(5) NOT NULL"],
        ["BOTH", " ", None],
        None,
        "VARCHAR(5) NOT NULL",
    ),
    ("LTRIM", ["STRING"], None, None, "STRING"),
    ("RTRIM", ["STRING NOT NULL"], None, None, "STRING NOT NULL"),
    ("SUBSTRING", ["VARCHAR(10)", "INT NOT NULL", "INT NOT NULL"], None, None, "VARCHAR(10)"),
    ("SUBSTR", ["STRING NOT NULL", "INT NOT NULL"], None, None, "STRING NOT NULL"),
    ("CHAR_LENGTH", ["STRING NOT NULL"], None, None, "INT NOT NULL"),
    ("REPLACE", ["STRING", "STRING", "STRING"], None, None, "STRING"),
    ("REGEXP_REPLACE", ["STRING", "STRING", "STRING"], None, None, "STRING"),
    ("REGEXP_EXTRACT", ["STRING NOT NULL", "STRING NOT NULL"], None, None, "STRING"),
    ("REGEXP", ["STRING NOT NULL", "STRING NOT NULL"], None, None, "BOOLEAN NOT NULL"),
    ("SPLIT_INDEX", ["STRING NOT NULL", "STRING NOT NULL", "INT NOT NULL"], None, None, "STRING"),
    ("LPAD", ["STRING", "INT", "STRING"], None, None, "STRING"),
    ("RPAD", ["STRING", "INT", "STRING"], None, None, "STRING"),
    ("REPEAT", ["STRING", "INT"], None, None, "STRING"),
    ("REVERSE", ["STRING"], None, None, "STRING"),
    ("POSITION", ["STRING", "STRING"], None, None, "INT"),
    ("LOCATE", ["STRING", "STRING", "INT"], None, None, "INT"),
    ("INSTR", ["STRING", "STRING"], None, None, "INT"),
    ("LEFT", ["STRING", "INT"], None, None, "STRING"),
    ("RIGHT", ["STRING", "INT"], None, None, "STRING"),
    ("MD5", ["STRING NOT NULL"], None, None, "CHAR(32) NOT NULL"),
    ("SHA1", ["STRING"], None, None, "CHAR(40)"),
    ("SHA256", ["STRING"], None, None, "CHAR(64)"),
    ("TO_BASE64", ["STRING"], None, None, "STRING"),
    ("FROM_BASE64", ["STRING"], None, None, "STRING"),
    ("ASCII", ["STRING"], None, None, "INT"),
    ("CHR", ["INT"], None, None, "CHAR(1)"),
    ("HASH_CODE", ["STRING NOT NULL"], None, None, "INT NOT NULL"),
    ("UUID", [], None, None, "CHAR(36) NOT NULL"),
    ("IS_ALPHA", ["STRING"], None, None, "BOOLEAN"),
    ("IS_DIGIT", ["STRING"], None, None, "BOOLEAN"),
    ("ABS", ["DECIMAL(5, 2) NOT NULL"], None, None, "DECIMAL(5, 2) NOT NULL"),
    ("POWER", ["INT", "INT"], None, None, "DOUBLE"),
    ("SQRT", ["INT NOT NULL"], None, None, "DOUBLE NOT NULL"),
    ("EXP", ["DOUBLE"], None, None, "DOUBLE"),
    ("LN", ["DOUBLE"], None, None, "DOUBLE"),
    ("LOG10", ["DOUBLE"], None, None, "DOUBLE"),
    ("LOG2", ["DOUBLE"], None, None, "DOUBLE"),
    ("LOG", ["DOUBLE", "DOUBLE"], None, None, "DOUBLE"),
    ("CEIL", ["DECIMAL(10, 2) NOT NULL"], None, None, "DECIMAL(9, 0) NOT NULL"),
    ("FLOOR", ["DOUBLE"], None, None, "DOUBLE"),
    ("FLOOR", ["TIMESTAMP(3) *ROWTIME*", "STRING NOT NULL"], [None, "HOUR"], None, "TIMESTAMP(3)"),
    ("ROUND", ["DECIMAL(10, 4)", "INT NOT NULL"], [None, 2], None, "DECIMAL(9, 2)"),
    ("ROUND", ["INT NOT NULL"], None, None, "INT NOT NULL"),
    ("TRUNCATE", ["DECIMAL(10, 4)", "INT NOT NULL"], [None, 2], None, "DECIMAL(9, 2)"),
    ("SIGN", ["DOUBLE"], None, None, "DOUBLE"),
    ("RAND", [], None, None, "DOUBLE NOT NULL"),
    ("PI", [], None, None, "DOUBLE NOT NULL"),
    ("DATE_FORMAT", ["TIMESTAMP(3)", "STRING NOT NULL"], None, None, "STRING"),
    ("TO_DATE", ["STRING NOT NULL"], None, None, "DATE"),
    ("TO_TIMESTAMP", ["STRING NOT NULL"], None, None, "TIMESTAMP(3)"),
    ("TO_TIMESTAMP_LTZ", ["BIGINT NOT NULL", "INT NOT NULL"], [None, 3], None, "TIMESTAMP_LTZ(3) NOT NULL"),
    ("$TO_TIMESTAMP_LTZ$1", ["BIGINT NOT NULL", "INT NOT NULL"], [None, 0], None, "TIMESTAMP_LTZ(3) NOT NULL"),
    ("UNIX_TIMESTAMP", [], None, None, "BIGINT NOT NULL"),
    ("UNIX_TIMESTAMP", ["STRING NOT NULL"], None, None, "BIGINT"),
    ("FROM_UNIXTIME", ["BIGINT"], None, None, "STRING"),
    ("CURRENT_DATE", [], None, None, "DATE NOT NULL"),
    ("CURRENT_TIME", [], None, None, "TIME(0) NOT NULL"),
    ("CURRENT_TIMESTAMP", [], None, None, "TIMESTAMP_LTZ(3) NOT NULL"),
    ("NOW", [], None, None, "TIMESTAMP_LTZ(3) NOT NULL"),
    ("LOCALTIMESTAMP", [], None, None, "TIMESTAMP(3) NOT NULL"),
    ("CURRENT_ROW_TIMESTAMP", [], None, None, "TIMESTAMP_LTZ(3) NOT NULL"),
    ("PROCTIME", [], None, None, "TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*"),
    ("CURRENT_WATERMARK", ["TIMESTAMP(3) NOT NULL *ROWTIME*"], None, None, "TIMESTAMP(3)"),
    ("CURRENT_WATERMARK", ["TIMESTAMP_LTZ(3) *ROWTIME*"], None, None, "TIMESTAMP_LTZ(3)"),
    ("EXTRACT", ["STRING NOT NULL", "TIMESTAMP(3) NOT NULL"], ["YEAR", None], None, "BIGINT NOT NULL"),
    ("YEAR", ["DATE"], None, None, "BIGINT"),
    ("QUARTER", ["DATE"], None, None, "BIGINT"),
    ("MONTH", ["DATE"], None, None, "BIGINT"),
    ("WEEK", ["DATE"], None, None, "BIGINT"),
    ("DAYOFYEAR", ["DATE"], None, None, "BIGINT"),
    ("DAYOFMONTH", ["DATE"], None, None, "BIGINT"),
    ("DAYOFWEEK", ["DATE"], None, None, "BIGINT"),
    ("HOUR", ["TIMESTAMP(3)"], None, None, "BIGINT"),
    ("MINUTE", ["TIMESTAMP(3)"], None, None, "BIGINT"),
    ("SECOND", ["TIMESTAMP(3)"], None, None, "BIGINT"),
    (
        "TIMESTAMPADD",
        ["STRING NOT NULL", "INT NOT NULL", "DATE NOT NULL"],
        ["HOUR", None, None],
        None,
        "TIMESTAMP(0) NOT NULL",
    ),
    ("TIMESTAMPADD", ["STRING NOT NULL", "INT NOT NULL", "DATE NOT NULL"], ["DAY", None, None], None, "DATE NOT NULL"),
    ("TIMESTAMPDIFF", ["STRING NOT NULL", "TIMESTAMP(3)", "TIMESTAMP(3)"], ["DAY", None, None], None, "INT"),
    ("JSON_VALUE", ["STRING NOT NULL", "STRING NOT NULL"], None, None, "STRING"),
    ("JSON_VALUE", ["STRING NOT NULL", "STRING NOT NULL"], None, "INT", "INT"),
    ("JSON_QUERY", ["STRING NOT NULL", "STRING NOT NULL"], None, None, "STRING"),
    ("JSON_EXISTS", ["STRING NOT NULL", "STRING NOT NULL"], None, None, "BOOLEAN NOT NULL"),
    ("JSON_STRING", ["INT NOT NULL"], None, None, "STRING NOT NULL"),
    ("ITEM", ["ARRAY<INT NOT NULL> NOT NULL", "INT NOT NULL"], None, None, "INT"),
    ("ITEM", ["MAP<STRING, BIGINT NOT NULL>", "STRING NOT NULL"], None, None, "BIGINT"),
    ("CARDINALITY", ["ARRAY<INT> NOT NULL"], None, None, "INT NOT NULL"),
    ("ARRAY", ["INT NOT NULL", "BIGINT"], None, None, "ARRAY<BIGINT> NOT NULL"),
    ("MAP", ["CHAR(1) NOT NULL", "INT NOT NULL"], None, None, "MAP<CHAR(1) NOT NULL, INT NOT NULL> NOT NULL"),
    ("ROW", ["INT NOT NULL", "STRING"], None, None, "ROW<`EXPR$0` INT NOT NULL, `EXPR$1` STRING> NOT NULL"),
    ("ELEMENT", ["ARRAY<INT NOT NULL> NOT NULL"], None, None, "INT"),
    # aggregates
    ("COUNT", [], None, None, "BIGINT NOT NULL"),
    ("COUNT", ["STRING"], None, None, "BIGINT NOT NULL"),
    ("SUM", ["INT NOT NULL"], None, None, "INT"),
    ("SUM", ["DECIMAL(10, 2)"], None, None, "DECIMAL(38, 2)"),
    ("SUM0", ["BIGINT"], None, None, "BIGINT NOT NULL"),
    ("AVG", ["INT NOT NULL"], None, None, "INT"),
    ("AVG", ["DOUBLE"], None, None, "DOUBLE"),
    ("AVG", ["DECIMAL(10, 2)"], None, None, "DECIMAL(38, 6)"),
    ("MIN", ["STRING NOT NULL"], None, None, "STRING"),
    ("MAX", ["TIMESTAMP(3) *ROWTIME*"], None, None, "TIMESTAMP(3)"),
    ("FIRST_VALUE", ["INT"], None, None, "INT"),
    ("LAST_VALUE", ["INT"], None, None, "INT"),
    ("LISTAGG", ["STRING", "CHAR(1) NOT NULL"], None, None, "STRING"),
    ("COLLECT", ["INT"], None, None, "MULTISET<INT> NOT NULL"),
    ("STDDEV_POP", ["DOUBLE"], None, None, "DOUBLE"),
    ("STDDEV_SAMP", ["INT"], None, None, "INT"),
    ("VAR_POP", ["DOUBLE"], None, None, "DOUBLE"),
    ("VAR_SAMP", ["DECIMAL(10, 2)"], None, None, "DECIMAL(38, 6)"),
    ("BOOL_AND", ["BOOLEAN"], None, None, "BOOLEAN"),
    ("BOOL_OR", ["BOOLEAN NOT NULL"], None, None, "BOOLEAN"),
    # window
    ("ROW_NUMBER", [], None, None, "BIGINT NOT NULL"),
    ("RANK", [], None, None, "BIGINT NOT NULL"),
    ("DENSE_RANK", [], None, None, "BIGINT NOT NULL"),
    ("NTILE", ["INT NOT NULL"], None, None, "BIGINT NOT NULL"),
    ("LAG", ["INT NOT NULL", "INT NOT NULL"], None, None, "INT"),
    ("LEAD", ["STRING"], None, None, "STRING"),
] + [
    (
        name,
        ["TIMESTAMP(3) *ROWTIME*", *["INTERVAL SECOND(3) NOT NULL"] * (2 if win == "HOP" else 1)],
        None,
        None,
        result,
    )
    for win in ("TUMBLE", "HOP", "SESSION")
    for name, result in (
        (win, "TIMESTAMP(3) *ROWTIME*"),
        (f"{win}_START", "TIMESTAMP(3) NOT NULL"),
        (f"{win}_END", "TIMESTAMP(3) NOT NULL"),
        (f"{win}_ROWTIME", "TIMESTAMP(3) NOT NULL *ROWTIME*"),
        (f"{win}_PROCTIME", "TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*"),
    )
]

ERRORS = [
    (
        "+",
        ["INT", "STRING"],
        None,
        None,
        "+(INT, STRING): cannot apply '+' to INT and STRING; both operands must be numeric",
    ),
    ("-", ["TIMESTAMP(3)", "TIMESTAMP(3)"], None, None, "use TIMESTAMPDIFF to subtract timestamps"),
    ("=", ["INT", "DATE"], None, None, "=(INT, DATE): cannot compare INT with DATE; CAST one side explicitly"),
    ("UPPER", ["INT"], None, None, "UPPER(INT): argument 1 must be string, not INT"),
    ("SUBSTRING", ["STRING"], None, None, "SUBSTRING(STRING): expects 2 to 3 argument(s) but got 1"),
    ("CAST", ["BOOLEAN"], None, "DATE", "CAST(BOOLEAN): cannot cast BOOLEAN to DATE"),
    ("CASE", ["BOOLEAN", "INT", "DATE"], None, None, "CASE branches have no common type: INT, DATE"),
    ("EXTRACT", ["STRING NOT NULL", "DATE"], ["FORTNIGHT", None], None, "time unit must be one of YEAR"),
    ("TO_TIMESTAMP_LTZ", ["BIGINT", "INT"], [None, 6], None, "precision must be the literal 0 (seconds) or 3"),
    ("CURRENT_WATERMARK", ["TIMESTAMP(3)"], None, None, "must be a rowtime attribute"),
    ("TUMBLE", ["TIMESTAMP(3)", "INTERVAL SECOND(3)"], None, None, "must be a time attribute"),
    ("HASH_CODE", ["DOUBLE"], None, None, "HASH_CODE supports strings, integers and booleans, not DOUBLE"),
    ("SUM", ["STRING"], None, None, "SUM(STRING): argument 1 must be numeric, not STRING"),
    ("AND", ["BOOLEAN", "INT"], None, None, "argument 2 must be boolean, not INT"),
]


def infer(name: str, operands: list[str], literals: list | None, target: str | None) -> str:
    fn = default_registry().resolve(name)
    assert fn is not None, name
    types = tuple(parse_type(t) for t in operands)
    values = tuple(NO_LITERAL if v is None else v for v in literals) if literals else ()
    ctx = CallContext(fn.name, types, values, parse_type(target) if target else None)
    return str(fn.infer_type(ctx))


@pytest.mark.parametrize(
    ("name", "operands", "literals", "target", "expected"),
    INFERENCE,
    ids=[f"{c[0]}({', '.join(c[1])})" for c in INFERENCE],
)
def test_result_type(name, operands, literals, target, expected):
    assert infer(name, operands, literals, target) == expected


@pytest.mark.parametrize(
    ("name", "operands", "literals", "target", "message"), ERRORS, ids=[f"{c[0]}({', '.join(c[1])})" for c in ERRORS]
)
def test_wrong_arguments_are_rejected_with_a_clear_message(name, operands, literals, target, message):
    with pytest.raises(ValidationError) as info:
        infer(name, operands, literals, target)
    assert message in str(info.value)
