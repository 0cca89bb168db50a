"""Type text normal forms: every spelling of a type renders the same, as plans compare types as strings."""

from __future__ import annotations

import pytest

from planengine.sql import parse_query, parse_script, parse_type, render_type

NORMAL_FORMS = [
    ("INT", "INT"),
    ("integer", "INT"),
    ("BIGINT", "BIGINT"),
    ("SMALLINT", "SMALLINT"),
    ("TINYINT", "TINYINT"),
    ("BOOLEAN", "BOOLEAN"),
    ("FLOAT", "FLOAT"),
    ("DOUBLE", "DOUBLE"),
    ("DECIMAL(10, 2)", "DECIMAL(10, 2)"),
    ("DECIMAL", "DECIMAL(10, 0)"),
    ("DECIMAL(5)", "DECIMAL(5, 0)"),
    ("STRING", "STRING"),
    ("VARCHAR", "STRING"),
    ("VARCHAR(2147483647)", "STRING"),
    ("VARCHAR(20)", "VARCHAR(20)"),
    ("CHAR(3)", "CHAR(3)"),
    ("BYTES", "BYTES"),
    ("VARBINARY(16)", "VARBINARY(16)"),
    ("DATE", "DATE"),
    ("TIME", "TIME(0)"),
    ("TIME(3)", "TIME(3)"),
    ("TIMESTAMP", "TIMESTAMP(6)"),
    ("TIMESTAMP(3)", "TIMESTAMP(3)"),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)"),
    ("TIMESTAMP_LTZ", "TIMESTAMP_LTZ(6)"),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)"),
    ("ARRAY<INT>", "ARRAY<INT>"),
    ("ARRAY<STRING NOT NULL>", "ARRAY<STRING NOT NULL>"),
    ("MAP<STRING, BIGINT>", "MAP<STRING, BIGINT>"),
    ("MULTISET<STRING>", "MULTISET<STRING>"),
    ("ROW<a INT, b STRING>", "ROW<`a` INT, `b` STRING>"),
    ("ROW(a INT, b STRING)", "ROW<`a` INT, `b` STRING>"),
    (
        "ROW<`My Field` INT NOT NULL, b ARRAY<ROW<c DOUBLE>>>",
        "ROW<`My Field` INT NOT NULL, `b` ARRAY<ROW<`c` DOUBLE>>>",
    ),
    ("INT NOT NULL", "INT NOT NULL"),
    ("DECIMAL(10, 2) NOT NULL", "DECIMAL(10, 2) NOT NULL"),
]


@pytest.mark.parametrize(("written", "normal"), NORMAL_FORMS)
def test_render_type_normal_forms(written, normal):
    assert render_type(parse_type(written)) == normal


@pytest.mark.parametrize(("written", "normal"), NORMAL_FORMS)
def test_column_type_text_uses_the_normal_form(written, normal):
    (table,) = parse_script(f"CREATE TABLE t (c {written}) WITH ('connector' = 'print')")
    assert table.columns[0].type_text == normal


@pytest.mark.parametrize(("written", "normal"), [(w, n) for w, n in NORMAL_FORMS if "NOT NULL" not in w])
def test_cast_generates_flink_types(written, normal):
    assert parse_query(f"SELECT CAST(x AS {written})").sql("flink") == f"SELECT CAST(x AS {normal})"
