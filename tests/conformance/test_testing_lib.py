"""``planengine.testing``: Flink row strings, changelog materialization, program DDL and source rows (no Spark)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pytest

from planengine.ir.types import parse_type
from planengine.testing.changelog import ChangelogRow, committed_files, materialize, read_changelog_json
from planengine.testing.conformance_programs import ConformanceProgram, ConformanceTable, expected_rows, json_lines
from planengine.testing.flink_rows import format_row, format_value, java_double, java_float, parse_row

T = parse_type


@pytest.mark.parametrize(("value", "text"), [
    (42.0, "42.0"), (0.1, "0.1"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (0.001, "0.001"),
    (0.0001, "1.0E-4"), (-2.5, "-2.5"), (0.0, "0.0"), (float("nan"), "NaN"), (float("inf"), "Infinity"),
    (100.02, "100.02"),
])
def test_java_double(value, text):
    assert java_double(value) == text


def test_java_float_uses_float32_digits():
    assert java_float(0.1) == "0.1"
    assert java_float(0.10000000149011612) == "0.1"
    assert java_float(3.0) == "3.0"


@pytest.mark.parametrize(("value", "type_", "text"), [
    (dt.datetime(2020, 10, 10, 0, 0), "TIMESTAMP(3)", "2020-10-10T00:00"),
    (dt.datetime(2020, 10, 10, 0, 0, 5), "TIMESTAMP(3)", "2020-10-10T00:00:05"),
    (dt.datetime(2020, 10, 10, 0, 0, 5, 500000), "TIMESTAMP(3)", "2020-10-10T00:00:05.500"),
    ("2020-04-15T08:00:13.999", "TIMESTAMP(3)", "2020-04-15T08:00:13.999"),
    ("2020-04-15T08:00:13.999Z", "TIMESTAMP_LTZ(3)", "2020-04-15T08:00:13.999Z"),
    ("2020-04-15T08:00:00.000Z", "TIMESTAMP_LTZ(3)", "2020-04-15T08:00:00Z"),
    ("2023-12-16T01:01:01.000000123", "TIMESTAMP(9)", "2023-12-16T01:01:01.000000123"),
    (decimal.Decimal("4"), "DECIMAL(10, 2)", "4.00"),
    (4, "DOUBLE", "4.0"),
    (None, "INT", "null"),
    (True, "BOOLEAN", "true"),
    ([1, "a"], "ROW<x INT, y STRING>", "+I[1, a]"),
    ({"x": 1, "y": None}, "ROW<x INT, y STRING>", "+I[1, null]"),
    ([1, 2], "ARRAY<INT>", "[1, 2]"),
    ({"k": 1.5}, "MAP<STRING, DOUBLE>", "{k=1.5}"),
])
def test_format_value(value, type_, text):
    assert format_value(value, T(type_)) == text


def test_parse_row_nesting_and_empty():
    assert parse_row("+I[]") == ("+I", ())
    assert parse_row("-D[1, +I[2, 3], [a, b]]") == ("-D", ("1", "+I[2, 3]", "[a, b]"))
    assert format_row("-U", [1, "a"]) == "-U[1, a]"
    with pytest.raises(ValueError):
        parse_row("1, 2")


def test_materialize_multiset_and_upsert():
    log = [ChangelogRow.parse(s) for s in ["+I[a, 1]", "+I[a, 1]", "-U[a, 1]", "+U[a, 2]", "-D[b, 9]"]]
    assert materialize(log) == {"a, 1": 1, "a, 2": 1, "b, 9": -1}
    upsert = [ChangelogRow.parse(s) for s in ["+I[k, 1]", "+U[k, 2]", "+I[j, 1]", "-D[j, 1]"]]
    assert materialize(upsert, key=[0]) == {"k, 2": 1}


def test_expected_rows_formats_row_of_lists():
    types = [T("INT"), T("DOUBLE"), T("STRING")]
    rows = expected_rows([[1, 2, "x"], {"kind": "-U", "values": [1, 2.5, None]}, "+U[1, 3.0, y]"], types)
    assert [r.text for r in rows] == ["+I[1, 2.0, x]", "-U[1, 2.5, null]", "+U[1, 3.0, y]"]


def test_json_lines_convert_java_values():
    names = ["ts", "ltz", "d", "r", "f"]
    types = [T("TIMESTAMP(3)"), T("TIMESTAMP_LTZ(3)"), T("DECIMAL(10, 2)"), T("ROW<a INT, b STRING>"), T("DOUBLE")]
    row = ["2023-12-16T01:01:01.000000123", "1970-01-01T00:00:00Z", "1.10", [1, "x"], 3]
    line = json_lines([row, {"kind": "-D", "values": row}], names, types, changelog=True).splitlines()
    first = json.loads(line[0], parse_float=decimal.Decimal)
    assert first == {"ts": "2023-12-16 01:01:01.000000", "ltz": "1970-01-01T00:00:00.000000Z",
                     "d": decimal.Decimal("1.10"), "r": {"a": 1, "b": "x"}, "f": 3.0, "op": "+I"}
    assert json.loads(line[1])["op"] == "-D"


def test_program_ddl_formats_and_options(tmp_path: Path):
    src = ConformanceTable("s", ["a STRING", "b INT", "PRIMARY KEY (a) NOT ENFORCED"],
                    {"changelog-mode": "I,UA,D", "filterable-fields": "b", "lookup": True})
    plain = ConformanceTable("p", ["a INT"], before=[[1]])
    sink = ConformanceTable("k", ["a STRING"], {"sink-changelog-mode": "I,UB,UA,D"})
    program = ConformanceProgram("f", "x", "INSERT INTO k SELECT a FROM s", [src, plain], [sink],
                      functions=[{"name": "f1", "scope": "temporary-system"},
                                 {"name": "Rates", "kind": "temporal-table-function"}])
    ddl = program.ddl(tmp_path, "tests.conformance.udfs")
    assert "CREATE TEMPORARY SYSTEM FUNCTION f1 AS 'tests.conformance.udfs.f1' LANGUAGE PYTHON" in ddl
    assert "Rates" not in ddl
    assert "'format' = 'changelog-json', 'changelog-mode' = 'I,UA,D')" in ddl
    assert "filterable-fields" not in ddl and "lookup" not in ddl and "sink-changelog-mode" not in ddl
    assert f"'path' = '{tmp_path / 'p'}', 'format' = 'json')" in ddl
    assert src.is_lookup


def test_read_changelog_json_honours_spark_metadata(tmp_path: Path):
    (tmp_path / "_spark_metadata").mkdir()
    good = tmp_path / "part-0.json"
    good.write_text('{"a": 1, "t": "2020-10-10T00:00:05.000", "op": "+I"}\n{"a": 1, "t": null, "op": "-U"}\n')
    (tmp_path / "part-aborted.json").write_text('{"a": 9, "t": null, "op": "+I"}\n')
    (tmp_path / "_spark_metadata" / "0").write_text(
        'v1\n' + json.dumps({"path": good.as_uri(), "action": "add"}) + "\n")
    assert committed_files(tmp_path) == [good]
    rows = read_changelog_json(tmp_path, ["a", "t"], [T("INT"), T("TIMESTAMP(3)")])
    assert [r.text for r in rows] == ["+I[1, 2020-10-10T00:00:05]", "-U[1, null]"]
    assert read_changelog_json(tmp_path / "absent", ["a"], [T("INT")]) == []
