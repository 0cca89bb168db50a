"""The text of dates and timestamps in JSON-based filesystem sinks is planengine's (Flink's JSON format), not
Spark's default: Spark 4.2 and 4.3 wrote the same sink differently before the writer set the patterns, so a
job upgraded across Spark minors produced files of two shapes in one table.

One in-process job (the engine running pytest) writes every timestamp flavour through three sinks and the
test compares the exact lines. The cross-version families (``test_spark_minor_upgrade``) check the other
Spark line: their expected rows use the same ``'SQL'`` text for both engines' files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from tests.cross_version.families import committed_records

ROWS = [{"k": "a", "ts": "2024-01-01 00:00:03.500", "t6": "2024-01-01 00:00:03.123456", "d": "2024-01-02",
         "lt": "2024-01-01T00:00:04.250Z"}]
DDL = """
CREATE TABLE src (k STRING, ts TIMESTAMP(3), t6 TIMESTAMP(6), d DATE, lt TIMESTAMP_LTZ(3),
                  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/in', 'format' = 'json');
CREATE TABLE sql_out (k STRING, ts TIMESTAMP(3), d DATE, lt TIMESTAMP_LTZ(3), r ROW<x TIMESTAMP(3)>)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/sql_out', 'format' = 'changelog-json');
CREATE TABLE iso_out (k STRING, ts TIMESTAMP(3), lt TIMESTAMP_LTZ(3))
  WITH ('connector' = 'filesystem', 'path' = '{dir}/iso_out', 'format' = 'json',
        'json.timestamp-format.standard' = 'ISO-8601');
CREATE TABLE micros_out (k STRING, ts TIMESTAMP(3), t6 TIMESTAMP(6))
  WITH ('connector' = 'filesystem', 'path' = '{dir}/micros_out', 'format' = 'json');
"""
INSERTS = """EXECUTE STATEMENT SET BEGIN
INSERT INTO sql_out SELECT k, ts, d, lt, CAST(ROW(ts) AS ROW<x TIMESTAMP(3)>) FROM src;
INSERT INTO iso_out SELECT k, ts, lt FROM src;
INSERT INTO micros_out SELECT k, ts, t6 FROM src;
END;"""


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("json_text")
    (data / "in").mkdir()
    (data / "in" / "rows.json").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    env = TableEnvironment()
    env.execute_sql(DDL.replace("{dir}", str(data)))
    env.execute_plan(env.compile_plan_sql(INSERTS), job_root=str(data / "job"), until_idle=True)
    return data


def test_sql_standard_is_the_default(written: Path) -> None:
    """A rowtime attribute (a Spark ``TIMESTAMP`` inside the query) is written as the sink's ``TIMESTAMP``:
    no zone, a space, milliseconds — also inside a ``ROW``; ``TIMESTAMP_LTZ`` in UTC with ``Z``."""
    assert committed_records(written / "sql_out") == [
        {"k": "a", "ts": "2024-01-01 00:00:03.500", "d": "2024-01-02", "lt": "2024-01-01 00:00:04.250Z",
         "r": {"x": "2024-01-01 00:00:03.500"}, "op": "+I"}]


def test_iso_8601_when_the_format_option_says_so(written: Path) -> None:
    assert committed_records(written / "iso_out") == [
        {"k": "a", "ts": "2024-01-01T00:00:03.500", "lt": "2024-01-01T00:00:04.250Z"}]


def test_a_wider_timestamp_keeps_its_microseconds(written: Path) -> None:
    assert committed_records(written / "micros_out") == [
        {"k": "a", "ts": "2024-01-01 00:00:03.500000", "t6": "2024-01-01 00:00:03.123456"}]
