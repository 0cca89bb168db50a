"""SQL text -> typed plan expressions: literal typing, mapping, implicit casts, errors, JSON, folding."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from sqlglot import exp

from planengine.errors import ValidationError
from planengine.functions.defaults import default_registry
from planengine.ir.expressions import Call, Expr, FunctionRef, InputRef, Literal
from planengine.ir.types import INT, parse_type
from planengine.planner.rex_converter import convert_expression, fold_constant
from tests.functions.helpers import RowScope, convert, parse

# (SQL, str(expr), str(type))
CONVERSIONS = [
    ("1", "1", "INT NOT NULL"),
    ("3000000000", "3000000000", "BIGINT NOT NULL"),
    ("1.5", "1.5", "DECIMAL(2, 1) NOT NULL"),
    ("0.25", "0.25", "DECIMAL(2, 2) NOT NULL"),
    ("1e3", "1000.0", "DOUBLE NOT NULL"),
    ("-7", "-7", "INT NOT NULL"),
    ("'ab'", "'ab'", "CHAR(2) NOT NULL"),
    ("TRUE", "true", "BOOLEAN NOT NULL"),
    ("NULL", "null", "NULL"),
    ("DATE '2020-01-02'", "2020-01-02", "DATE NOT NULL"),
    ("TIMESTAMP '2020-10-10 00:00:05'", "2020-10-10T00:00:05", "TIMESTAMP(0) NOT NULL"),
    ("TIMESTAMP '2020-10-10 00:00:05.123'", "2020-10-10T00:00:05.123000", "TIMESTAMP(3) NOT NULL"),
    ("INTERVAL '5' SECOND", "5000:INTERVAL", "INTERVAL DAY TO SECOND NOT NULL"),
    ("INTERVAL '1' MINUTE", "60000:INTERVAL", "INTERVAL DAY TO SECOND NOT NULL"),
    ("INTERVAL '2' HOUR", "7200000:INTERVAL", "INTERVAL DAY TO SECOND NOT NULL"),
    ("INTERVAL '1' DAY", "86400000:INTERVAL", "INTERVAL DAY TO SECOND NOT NULL"),
    ("INTERVAL '1 02:00:00' DAY TO SECOND", "93600000:INTERVAL", "INTERVAL DAY TO SECOND NOT NULL"),
    ("INTERVAL '1' MONTH", "1", "INTERVAL YEAR TO MONTH NOT NULL"),
    ("INTERVAL '2' YEAR", "24", "INTERVAL YEAR TO MONTH NOT NULL"),
    ("i + 1", "+($2, 1)", "INT"),
    ("n + 1", "+($5, 1)", "BIGINT NOT NULL"),
    ("UPPER(s)", "UPPER($0)", "STRING"),
    ("s || 'x'", "||($0, 'x')", "STRING"),
    ("i = b", "=(CAST($2), $4)", "BOOLEAN"),
    ("i IN (1, 2)", "IN($2, 1, 2)", "BOOLEAN"),
    ("b IN (1, 2)", "IN($4, 1, 2)", "BOOLEAN"),
    ("ts > '2020-01-01 00:00:00'", ">($8, CAST('2020-01-01 00:00:00'))", "BOOLEAN"),
    ("dt < ts", "<(CAST($10), $8)", "BOOLEAN"),
    ("s NOT LIKE 'a%'", "NOT LIKE($0, 'a%')", "BOOLEAN"),
    ("i NOT BETWEEN 1 AND 2", "NOT BETWEEN($2, 1, 2)", "BOOLEAN"),
    ("i NOT IN (1, 2)", "NOT IN($2, 1, 2)", "BOOLEAN"),
    ("i IS NOT NULL", "IS NOT NULL($2)", "BOOLEAN NOT NULL"),
    ("flag IS NOT TRUE", "IS NOT TRUE($14)", "BOOLEAN NOT NULL"),
    ("i IS DISTINCT FROM i2", "IS DISTINCT FROM($2, $3)", "BOOLEAN NOT NULL"),
    ("CASE i WHEN 1 THEN 'a' ELSE 'bc' END", "CASE(=($2, 1), 'a', 'bc')", "VARCHAR(2) NOT NULL"),
    ("CASE WHEN flag THEN 1 END", "CASE($14, 1, null)", "INT"),
    ("IF(flag, 1, 2)", "IF($14, 1, 2)", "INT NOT NULL"),
    ("COALESCE(i2, 0)", "COALESCE($3, 0)", "INT NOT NULL"),
    ("IFNULL(i2, 0)", "COALESCE($3, 0)", "INT NOT NULL"),
    ("CAST(s AS INT)", "CAST($0)", "INT"),
    ("TRY_CAST(s AS INT)", "TRY_CAST($0)", "INT"),
    ("CAST(n AS STRING)", "CAST($5)", "STRING NOT NULL"),
    ("CAST(ts AS TIMESTAMP_LTZ(3))", "CAST($8)", "TIMESTAMP_LTZ(3)"),
    ("-i", "NEGATE($2)", "INT"),
    ("TRIM(BOTH 'x' FROM s)", "TRIM('BOTH', 'x', $0)", "STRING"),
    ("LTRIM(s)", "TRIM('LEADING', ' ', $0)", "STRING"),
    ("SUBSTRING(s FROM 2 FOR 3)", "SUBSTRING($0, 2, 3)", "STRING"),
    ("POSITION('a' IN s)", "POSITION('a', $0)", "INT"),
    ("CHAR_LENGTH(s)", "CHAR_LENGTH($0)", "INT"),
    ("EXTRACT(YEAR FROM ts)", "EXTRACT('YEAR', $8)", "BIGINT"),
    ("FLOOR(ts TO HOUR)", "FLOOR($8, 'HOUR')", "TIMESTAMP(3)"),
    ("CEIL(m)", "CEIL($7)", "DECIMAL(9, 0)"),
    ("TIMESTAMPADD(MINUTE, 5, ts)", "TIMESTAMPADD('MINUTE', 5, $8)", "TIMESTAMP(3)"),
    ("TIMESTAMPDIFF(DAY, dt, ts)", "TIMESTAMPDIFF('DAY', $10, $8)", "INT"),
    ("ts + INTERVAL '5' SECOND", "+($8, 5000:INTERVAL)", "TIMESTAMP(3)"),
    ("rt - INTERVAL '5' SECOND", "-($16, 5000:INTERVAL)", "TIMESTAMP(3)"),
    ("arr[1]", "ITEM($12, 1)", "INT"),
    ("mp['k']", "ITEM($13, 'k')", "INT"),
    ("ARRAY[1, 2]", "ARRAY(1, 2)", "ARRAY<INT NOT NULL> NOT NULL"),
    ("ROW(i, s)", "ROW($2, $0)", "ROW<`EXPR$0` INT, `EXPR$1` STRING> NOT NULL"),
    ("PROCTIME()", "PROCTIME()", "TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*"),
    ("CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP()", "TIMESTAMP_LTZ(3) NOT NULL"),
    ("JSON_VALUE(j, '$.a')", "JSON_VALUE($11, '$.a')", "STRING"),
    ("LOG10(d)", "LOG10($6)", "DOUBLE"),
    ("COUNT(*)", "COUNT()", "BIGINT NOT NULL"),
    ("SUM(m)", "SUM($7)", "DECIMAL(38, 2)"),
    ("$TO_TIMESTAMP_LTZ$1(n, 0)", "TO_TIMESTAMP_LTZ($5, 0)", "TIMESTAMP_LTZ(3) NOT NULL"),
]


@pytest.mark.parametrize(("sql", "text", "type_text"), CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_conversion(sql, text, type_text):
    expr = convert(sql)
    assert (str(expr), str(expr.type)) == (text, type_text)


def test_implicit_cast_is_an_explicit_cast_call_to_the_wider_type():
    expr = convert("i = b")
    assert isinstance(expr, Call)
    cast = expr.operands[0]
    assert isinstance(cast, Call) and cast.name == "CAST" and str(cast.type) == "BIGINT"


def test_string_literal_compared_with_timestamp_is_cast_to_the_timestamp_type():
    cast = convert("ts > '2020-01-01 00:00:00'").operands[1]
    assert isinstance(cast, Call) and str(cast.type) == "TIMESTAMP(3) NOT NULL"


def test_versions_resolve_newest_unless_the_internal_name_is_used():
    assert convert("TO_TIMESTAMP_LTZ(n, 3)").function == FunctionRef("TO_TIMESTAMP_LTZ", 2)
    assert convert("$TO_TIMESTAMP_LTZ$1(n, 3)").function == FunctionRef("TO_TIMESTAMP_LTZ", 1)


def test_unknown_function_suggests_a_close_name():
    with pytest.raises(ValidationError) as info:
        convert("UPPR(s)")
    assert info.value.message == "unknown function UPPR"
    assert info.value.hint == "did you mean UPPER?"
    assert info.value.location is not None and info.value.location.line == 1


def test_unknown_function_without_a_close_name_points_to_create_function():
    with pytest.raises(ValidationError, match="CREATE FUNCTION"):
        convert("COMPLETELY_DIFFERENT(s)")


def test_unknown_column_error_comes_from_the_scope_with_its_location():
    with pytest.raises(ValidationError) as info:
        convert("s || missing")
    assert "column 'missing' not found" in info.value.message
    assert info.value.location is not None and info.value.location.column is not None


def test_wrong_argument_types_are_reported():
    with pytest.raises(ValidationError, match=r"UPPER\(INT\): argument 1 must be string, not INT"):
        convert("UPPER(i)")
    with pytest.raises(ValidationError, match="cannot compare INT with DATE"):
        convert("i = dt")


def test_scope_converts_special_nodes_first():
    class AggregateScope(RowScope):
        def convert_special(self, node, convert):
            if isinstance(node, exp.Count):
                return InputRef(99, parse_type("BIGINT NOT NULL"))
            return None

    expr = convert_expression(parse("COUNT(*) + 1"), AggregateScope())
    assert str(expr) == "+($99, 1)" and str(expr.type) == "BIGINT NOT NULL"


def test_special_node_converter_can_recurse_through_the_converter():
    class WrapScope(RowScope):
        def convert_special(self, node, convert):
            if isinstance(node, exp.Sum):
                inner = convert(node.this)
                return Call(FunctionRef("SUM", 1), (inner,), inner.type.with_nullable(True))
            return None

    assert str(convert_expression(parse("SUM(i + 1)"), WrapScope())) == "SUM(+($2, 1))"


def test_sub_query_in_is_left_to_the_planner():
    with pytest.raises(ValidationError, match="sub-query"):
        convert("i IN (SELECT 1)")


def test_json_value_returning_type_from_a_sqlglot_json_value_node():
    node = exp.JSONValue(this=exp.column("j"), path=exp.Literal.string("$.a"),
                         returning=exp.DataType.build("INT"))
    expr = convert_expression(node, RowScope())
    assert str(expr) == "JSON_VALUE($11, '$.a')" and str(expr.type) == "INT"


# --- JSON round trip -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sql", [c[0] for c in CONVERSIONS])
def test_converted_expressions_survive_a_json_round_trip(sql):
    expr = convert(sql)
    data = json.loads(json.dumps(expr.to_json(), sort_keys=True))
    assert Expr.from_json(data) == expr
    assert "sqlglot" not in json.dumps(data)


# --- constant folding -----------------------------------------------------------------------------------------
FOLDING = [
    ("1 + 2 * 3", 7, "INT NOT NULL"),
    ("7 / 2", 3, "INT NOT NULL"),
    ("-7 / 2", -3, "INT NOT NULL"),
    ("-7 % 3", -1, "INT NOT NULL"),
    ("1.5 + 1", Decimal("2.5"), "DECIMAL(12, 1) NOT NULL"),
    ("1.0 / 3", Decimal("0.333333333333"), "DECIMAL(13, 12) NOT NULL"),
    ("2 > 1", True, "BOOLEAN NOT NULL"),
    ("NULL = 1", None, "BOOLEAN"),
    ("TRUE AND NULL", None, "BOOLEAN"),
    ("FALSE AND NULL", False, "BOOLEAN"),
    ("TRUE OR NULL", True, "BOOLEAN"),
    ("'a' || 'b'", "ab", "STRING NOT NULL"),
    ("UPPER('ab')", "AB", "CHAR(2) NOT NULL"),
    ("CAST('42' AS INT)", 42, "INT NOT NULL"),
    ("CAST(TRUE AS STRING)", "TRUE", "STRING NOT NULL"),
    ("CAST(7 AS CHAR(3))", "7  ", "CHAR(3) NOT NULL"),
    ("CAST(1.25 AS INT)", 1, "INT NOT NULL"),
    ("CAST('1.25' AS DECIMAL(3, 1))", Decimal("1.3"), "DECIMAL(3, 1) NOT NULL"),
]


@pytest.mark.parametrize(("sql", "value", "type_text"), FOLDING, ids=[c[0] for c in FOLDING])
def test_fold_constant(sql, value, type_text):
    def fold(e: Expr) -> Expr:
        if isinstance(e, Call):
            e = Call(e.function, tuple(fold(o) for o in e.operands), e.type)
            return fold_constant(e) or e
        return e

    folded = fold(convert(sql))
    assert isinstance(folded, Literal)
    assert (folded.value, str(folded.type)) == (value, type_text)


@pytest.mark.parametrize("sql", ["RAND() + 1", "CAST('x' AS INT)", "1 / 0", "2147483647 + 1", "i + 1",
                                 "TIMESTAMP '2020-01-01 00:00:00' + INTERVAL '1' SECOND", "CURRENT_DATE"])
def test_fold_constant_refuses_nondeterministic_failing_or_non_literal_calls(sql):
    expr = convert(sql)
    assert isinstance(expr, Call) and fold_constant(expr) is None


def test_fold_constant_leaves_user_functions_alone():
    call = Call(FunctionRef("f", None, system=True), (Literal(1, INT),), INT)
    assert fold_constant(call, default_registry()) is None


def test_date_literal_value():
    assert convert("DATE '2020-01-02'") == Literal(dt.date(2020, 1, 2), parse_type("DATE NOT NULL"))
