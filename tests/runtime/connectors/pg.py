"""Small helpers shared by the connector tests: SQL on the test database, rows of a changelog-json sink."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def pg_execute(db: Any, *statements: str, params: Any = None) -> None:
    import psycopg

    with psycopg.connect(db.dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement, params)


def pg_rows(db: Any, query: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(db.dsn) as conn:
        return [tuple(r) for r in conn.execute(query).fetchall()]


def jdbc_options(db: Any, table: str, **extra: str) -> str:
    options = {"connector": "jdbc", "url": db.jdbc_url, "table-name": table, "username": db.user, **extra}
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def write_json(directory: Path, name: str, rows: list[dict]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{name}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tmp.rename(directory / f"{name}.json")


def changelog(spark: Any, path: Path, ddl: str) -> list[str]:
    """Rows of a changelog-json file sink (columns ``ddl``) as Flink strings (``+I[1, a]``), committed only."""
    from planengine.runtime.connectors.print_sink import flink_row

    if not (path / "_spark_metadata").is_dir():
        return []
    rows = spark.read.schema(ddl + ", op STRING").json(str(path)).collect()
    return [flink_row(r["op"], list(r)[:-1]) for r in rows]
