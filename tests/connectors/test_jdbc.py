import datetime as dt
import decimal
import re

import pytest

from planengine.connectors.base import LookupContext, ScanContext
from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.connectors.jdbc_sql import (
    is_pushable,
    postgres_conninfo,
    quote_identifier,
    render_postgres_delete,
    render_postgres_upsert,
    render_postgres_where,
)
from planengine.errors import OptionError
from planengine.ir import types as T
from planengine.ir.changelog import ALL, INSERT_ONLY, UPSERT
from planengine.ir.expressions import Call, FieldAccess, FunctionRef
from tests.connectors.builders import build_ctx, call, lit, ref

COLUMNS = [("id", "BIGINT"), ("name", "STRING"), ("price", "DECIMAL(10, 2)"), ("ts", "TIMESTAMP(3)")]
URL = "jdbc:postgresql://db:5432/shop"
NAMES = ["id", "name", "price", "ts"]
S = T.STRING


def jdbc_ctx(primary_key=None, **options):
    return build_ctx(COLUMNS, {"connector": "jdbc", "url": URL, "table-name": "public.items", **options},
                     primary_key=primary_key)


@pytest.mark.parametrize(("filters", "sql", "params"), [
    ([call(">", ref(0), lit(5))], '"id" > %s', [5]),
    ([call(">", ref(0), lit(5)), call("IS NULL", ref(1, S))], '"id" > %s AND "name" IS NULL', [5]),
    ([call("IS NOT NULL", ref(1, S))], '"name" IS NOT NULL', []),
    ([call("<=", lit(3), ref(0))], '%s <= "id"', [3]),
    ([call("<>", ref(1, S), lit("o'k", S))], '"name" <> %s', ["o'k"]),
    ([call("!=", ref(0), lit(1))], '"id" <> %s', [1]),
    ([call("=", ref(0), ref(2))], '"id" = "price"', []),
    ([call("OR", call("=", ref(0), lit(1)), call("=", ref(0), lit(2))), call("<", ref(2), lit(9))],
     '("id" = %s OR "id" = %s) AND "price" < %s', [1, 2, 9]),
    ([call("OR", call("=", ref(0), lit(1)), call("=", ref(0), lit(2)))], '"id" = %s OR "id" = %s', [1, 2]),
    ([call("AND", call(">=", ref(0), lit(1)), call("NOT", call("IS NULL", ref(3, T.timestamp(3)))))],
     '"id" >= %s AND NOT ("ts" IS NULL)', [1]),
    ([call(">", ref(3, T.timestamp(3)), lit(dt.datetime(2024, 1, 1), T.timestamp(3)))],
     '"ts" > %s', [dt.datetime(2024, 1, 1)]),
    ([], "", []),
])
def test_render_postgres_where(filters, sql, params):
    assert render_postgres_where(filters, NAMES) == (sql, params)


def test_identifiers_are_quoted_for_postgres_and_psycopg():
    assert quote_identifier('we"ird%col') == '"we""ird%%col"'
    assert render_postgres_where([call("=", ref(0), lit(1))], ["50%"]) == ('"50%%" = %s', [1])


@pytest.mark.parametrize(("expr", "pushable"), [
    (call("=", ref(0), lit(1)), True),
    (call("LIKE", ref(1, S), lit("a%", S)), False),
    (call("=", lit(1), lit(1)), False),
    (call("=", Call(FunctionRef("UPPER"), (ref(1, S),), S), lit("A", S)), False),
    (call("=", FieldAccess(ref(0, T.row(("x", T.INT))), "x", T.INT), lit(1)), False),
    (call("=", ref(0), lit(dt.timedelta(seconds=1), T.INTERVAL_DAY_TIME)), False),
    (call("OR", call("=", ref(0), lit(1)), call("LIKE", ref(1, S), lit("a", S))), False),
    (Call(FunctionRef("f", None, catalog_identifier="`c`.`d`.`f`"), (ref(0),), T.BOOLEAN), False),
])
def test_which_predicates_postgres_evaluates(expr, pushable):
    assert is_pushable(expr) is pushable


def test_filter_push_down_keeps_what_postgres_cannot_evaluate():
    source = create_table_source(jdbc_ctx())
    simple = call(">", ref(0), lit(5))
    like = call("LIKE", ref(1, S), lit("a%", S))
    result = source.apply_filters([simple, like])
    assert result.accepted == [simple] and result.remaining == [like]
    assert source.where_clause() == ('"id" > %s', [5])


def test_projection_filters_and_limit_become_one_select():
    source = create_table_source(jdbc_ctx())
    source.apply_projection([[3], [2]], T.row(("ts", T.timestamp(3)), ("price", T.decimal(10, 2))))
    # After the projection, field 1 is `price`: stored filters refer to table columns.
    source.apply_filters([call(">", ref(1, T.decimal(10, 2)), lit(decimal.Decimal("9.99"), T.decimal(10, 2)))])
    source.apply_limit(100)
    assert source.select_query() == (
        'SELECT "ts", "price" FROM "public"."items" WHERE "price" > %s LIMIT 100', [decimal.Decimal("9.99")])
    assert source.as_summary_string() == (
        'jdbc(table=public.items, project=[ts, price], where=["price" > %s], limit=100)')


def test_scan_is_bounded_and_insert_only():
    source = create_table_source(jdbc_ctx())
    assert source.changelog_mode() == INSERT_ONLY
    assert source.scan_runtime_provider(ScanContext()).is_bounded


def test_lookup_provider_names_keys_and_carries_cache_options():
    source = create_table_source(jdbc_ctx(**{"lookup.cache": "partial", "lookup.partial-cache.max-rows": "1000",
                                             "lookup.partial-cache.expire-after-write": "10 min"}))
    provider = source.lookup_runtime_provider(LookupContext(((0,), (1,))))
    assert provider.key_names == ("id", "name")
    assert provider.options == {"cache": "PARTIAL", "max_rows": 1000, "expire_after_write_ms": 600_000,
                                "expire_after_access_ms": None, "cache_missing_key": True, "max_retries": 3}
    assert source.lookup_query(provider.key_names) == (
        'SELECT "id", "name", "price", "ts" FROM "public"."items" WHERE "id" = %s AND "name" = %s')


def test_sink_upserts_with_a_primary_key_and_only_inserts_without():
    keyed = create_table_sink(jdbc_ctx(primary_key=("id",)))
    assert keyed.changelog_mode(ALL) == UPSERT
    assert keyed.write_statement() == (
        'INSERT INTO "public"."items" ("id", "name", "price", "ts") VALUES (%s, %s, %s, %s) ON CONFLICT ("id") '
        'DO UPDATE SET "name" = EXCLUDED."name", "price" = EXCLUDED."price", "ts" = EXCLUDED."ts"')
    assert keyed.delete_statement() == 'DELETE FROM "public"."items" WHERE "id" = %s'
    plain = create_table_sink(jdbc_ctx())
    assert plain.changelog_mode(ALL) == INSERT_ONLY
    assert plain.delete_statement() is None
    assert plain.write_statement().endswith("VALUES (%s, %s, %s, %s)")
    assert render_postgres_upsert("t", ["k"], ["k"]).endswith('ON CONFLICT ("k") DO NOTHING')


def test_option_rules_reported_together():
    with pytest.raises(OptionError) as info:
        create_table_source(jdbc_ctx(**{"url": "jdbc:mysql://x/y", "password": "hunter2",
                                        "scan.partition.column": "id", "lookup.partial-cache.max-rows": "5"}))
    text = str(info.value)
    assert "option 'url' = 'jdbc:mysql://x/y' is not valid: expected a PostgreSQL JDBC URL" in text
    assert "hunter2" not in text

    with pytest.raises(OptionError) as info:
        create_table_source(jdbc_ctx(**{"password": "hunter2", "scan.partition.column": "id",
                                        "lookup.partial-cache.max-rows": "5"}))
    text = str(info.value)
    assert "'password' is set without 'username'" in text
    assert "the scan.partition.* options go together" in text
    assert "only apply with 'lookup.cache' = 'PARTIAL'" in text
    assert "hunter2" not in text


def test_scan_partition_column_must_be_numeric():
    options = {"scan.partition.column": "name", "scan.partition.num": "4", "scan.partition.lower-bound": "0",
               "scan.partition.upper-bound": "100"}
    with pytest.raises(OptionError, match=re.escape("'scan.partition.column' = 'name' must be numeric")):
        create_table_source(jdbc_ctx(**options))
    source = create_table_source(jdbc_ctx(**{**options, "scan.partition.column": "id"}))
    assert source.options["scan.partition.num"] == 4


def test_conninfo_from_jdbc_url():
    assert postgres_conninfo("jdbc:postgresql://h:5432/db?sslmode=require") == "postgresql://h:5432/db?sslmode=require"


def test_rendered_statements_run_on_postgres(postgres_db):
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        conn.execute('CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT, price NUMERIC(10, 2), ts TIMESTAMP(3))')
        ctx = build_ctx(COLUMNS, {"connector": "jdbc", "url": postgres_db.jdbc_url, "table-name": "items"},
                        primary_key=("id",))
        sink = create_table_sink(ctx)
        rows = [(1, "a", decimal.Decimal("1.50"), dt.datetime(2024, 1, 1)), (2, None, decimal.Decimal("20"), None),
                (1, "a2", decimal.Decimal("3"), None)]
        for row in rows:
            conn.execute(sink.write_statement(), row)
        conn.execute(render_postgres_delete("items", ["id"]), (2,))
        conn.execute(sink.write_statement(), (3, "c", decimal.Decimal("7"), None))

        source = create_table_source(ctx)
        source.apply_filters([call(">", ref(2, T.decimal(10, 2)), lit(decimal.Decimal("2"), T.decimal(10, 2))),
                              call("IS NULL", ref(3, T.timestamp(3)))])
        sql, params = source.select_query()
        assert conn.execute(sql + ' ORDER BY "id"', params).fetchall() == [
            (1, "a2", decimal.Decimal("3.00"), None), (3, "c", decimal.Decimal("7.00"), None)]
