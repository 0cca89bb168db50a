"""End-to-end cases as data (``tests/e2e_cases/<family>/*.yaml``) through the real executor and Spark.

Each case: optional session ``config`` (``SET`` options), DDL (``{dir}`` = the case's directory), one
statement, per source the rows written before a stop and after it (one file per phase, so each phase is
one micro-batch when nothing else splits it), and per sink the exact changelog expected before and after
(Flink's row strings, compared as multisets), or with ``compare: materialized`` the table the changelog
amounts to after each phase (``+I`` strings; for updating results whose intermediate changes depend on how
a batch interleaves its inputs). Phase 1 runs until idle and stops with a snapshot; phase 2 adds the
``after`` rows and runs again on the same job root, continuing from that snapshot, with ``drain``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from planengine.api import TableEnvironment
from planengine.runtime.connectors.print_sink import flink_row

CASES = sorted((Path(__file__).parent.parent / "e2e_cases").glob("*/*.yaml"))



def write_rows(directory: Path, name: str, rows: list[dict]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{name}.json", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def sink_changelog(spark, env: TableEnvironment, table: str, path: Path) -> list[str]:
    from pyspark.sql import functions as F

    from planengine.runtime.connectors import spark_schema_ddl
    from planengine.runtime.connectors.filesystem import _json_readable
    from planengine.runtime.dataflow.expressions import render_spark_type

    t = env.catalog_manager.get_table(env.catalog_manager.qualify([table])).object
    columns = t.schema.physical_columns
    read_types = [_json_readable(c.type) for c in columns]
    ddl = spark_schema_ddl([c.name for c in columns], read_types) + ", op STRING"
    if not (path / "_spark_metadata").is_dir():
        return []
    df = spark.read.schema(ddl).json(str(path))
    for c, read in zip(columns, read_types, strict=True):
        if read is not c.type:  # JSON map keys are strings
            key_type = render_spark_type(c.type.key)
            df = df.withColumn(c.name, F.expr(f"transform_keys(`{c.name}`, (k, v) -> CAST(k AS {key_type}))"))
    rows = df.collect()
    return [flink_row(r["op"], [r[c.name] for c in columns]) for r in rows]


def materialize(changelog: list[str]) -> Counter:
    """The multiset of rows a retract changelog leaves (``+I``/``+U`` add a row, ``-U``/``-D`` remove one)."""
    rows: Counter = Counter()
    for entry in changelog:
        kind, body = entry[:2], entry[2:]
        rows["+I" + body] += 1 if kind in ("+I", "+U") else -1
    return +rows


def load(case: Path) -> dict:
    return yaml.safe_load(case.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_case(case: Path, tmp_path: Path, spark) -> None:
    spec = load(case)
    ddl = spec["ddl"].replace("{dir}", str(tmp_path))
    env = TableEnvironment({k: str(v) for k, v in (spec.get("config") or {}).items()})
    env.execute_sql(ddl)
    for name, rows in (spec.get("sources") or {}).items():
        write_rows(tmp_path / name, "before", rows.get("before", []))
    plan = env.compile_plan_sql(spec["statement"])
    job_root = tmp_path / "job"
    first = env.execute_plan(plan, job_root=str(job_root), until_idle=True)
    assert first.snapshot_id is not None
    for sink, expected in spec["sinks"].items():
        got = sink_changelog(spark, env, sink, tmp_path / sink)
        if expected.get("compare") == "materialized":
            assert materialize(got) == Counter(expected["before"]), sink
        else:
            assert Counter(got) == Counter(expected["before"]), sink

    for name, rows in (spec.get("sources") or {}).items():
        write_rows(tmp_path / name, "after", rows.get("after", []))
    second = env.execute_plan(plan, job_root=str(job_root), until_idle=True, drain=True)
    assert second.run_id != first.run_id
    for sink, expected in spec["sinks"].items():
        got = sink_changelog(spark, env, sink, tmp_path / sink)
        if expected.get("compare") == "materialized":
            assert materialize(got) == Counter(expected["after"]), sink
        else:
            assert Counter(got) == Counter(expected["before"]) + Counter(expected["after"]), sink
