"""Data-driven cases that need PostgreSQL: ``tests/e2e_cases/*/postgres/*.yaml`` (one level below the families
the generic runner reads, so ``test_executor_cases`` does not pick them up).

A case is a generic e2e case (``ddl`` with ``{dir}``, ``statement``, ``sources`` before/after, changelog
``sinks`` before/after) plus ``postgres.setup`` (SQL run on a fresh database first), ``postgres.between`` (SQL
run between the two phases) and ``tables`` (per PostgreSQL table: a ``query`` and its rows after each phase).
``{pg:<table>}`` in the DDL becomes the jdbc options of that table on the test database.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from planengine.api import TableEnvironment

from .pg import changelog, jdbc_options, pg_execute, pg_rows, write_json

CASES = sorted((Path(__file__).parents[2] / "e2e_cases").glob("*/postgres/*.yaml"))



def sink_ddl(env: TableEnvironment, table: str) -> str:
    from planengine.runtime.connectors import spark_schema_ddl

    t = env.catalog_manager.get_table(env.catalog_manager.qualify([table])).object
    columns = t.schema.physical_columns
    return spark_schema_ddl([c.name for c in columns], [c.type for c in columns])


def check(spark, env, spec, db, tmp_path: Path, phase: str) -> None:
    for sink, expected in (spec.get("sinks") or {}).items():
        want = Counter(expected.get("before", [])) + (Counter(expected.get("after", [])) if phase == "after"
                                                      else Counter())
        assert Counter(changelog(spark, tmp_path / sink, sink_ddl(env, sink))) == want, f"{sink} after {phase}"
    for table, expected in (spec.get("tables") or {}).items():
        got = [list(r) for r in pg_rows(db, expected["query"])]
        assert got == expected[phase], f"PostgreSQL table {table} after {phase}"


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parents[1].name}/{c.stem}" for c in CASES])
def test_postgres_case(case: Path, tmp_path: Path, spark, postgres_db) -> None:
    spec = yaml.safe_load(case.read_text(encoding="utf-8"))
    pg_execute(postgres_db, *(spec.get("postgres") or {}).get("setup", []))
    ddl = spec["ddl"].replace("{dir}", str(tmp_path))
    ddl = re.sub(r"\{pg:(\w+)\}", lambda m: jdbc_options(postgres_db, m.group(1)), ddl)
    env = TableEnvironment()
    env.execute_sql(ddl)
    for name, rows in (spec.get("sources") or {}).items():
        write_json(tmp_path / name, "before", rows.get("before", []))
    plan = env.compile_plan_sql(spec["statement"])
    root = tmp_path / "job"
    env.execute_plan(plan, job_root=str(root), until_idle=True)
    check(spark, env, spec, postgres_db, tmp_path, "before")

    pg_execute(postgres_db, *(spec.get("postgres") or {}).get("between", []))
    for name, rows in (spec.get("sources") or {}).items():
        write_json(tmp_path / name, "after", rows.get("after", []))
    env.execute_plan(plan, job_root=str(root), until_idle=True)
    check(spark, env, spec, postgres_db, tmp_path, "after")
