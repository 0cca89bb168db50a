"""DESCRIBE, SHOW …, ALTER TABLE and CREATE OR REPLACE TABLE, as a user types them (Flink SQL client shapes)."""

from __future__ import annotations

import pytest

from planengine.api import TableEnvironment
from planengine.errors import CatalogError, SqlParseError, ValidationError

ORDERS = """
CREATE TABLE orders (
  id BIGINT, customer STRING COMMENT 'who ordered', price DECIMAL(10, 2), ts TIMESTAMP(3),
  total AS price * 2, src STRING METADATA FROM 'source' VIRTUAL,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (id) NOT ENFORCED
) COMMENT 'all orders' PARTITIONED BY (customer)
WITH ('connector' = 'filesystem', 'path' = '/data/orders', 'format' = 'json', 'password' = 'hunter2',
      'token' = '${env:ORDERS_TOKEN}');
CREATE VIEW big AS SELECT id, price FROM orders WHERE price > 100;
"""


@pytest.fixture
def env() -> TableEnvironment:
    env = TableEnvironment()
    env.execute_sql(ORDERS)
    return env


def one(env: TableEnvironment, sql: str):  # type: ignore[no-untyped-def]
    [result] = env.execute_sql(sql)
    return result


def test_describe_lists_columns_like_flink(env: TableEnvironment) -> None:
    result = one(env, "DESCRIBE orders")
    assert result.columns == ("name", "type", "null", "key", "extras", "watermark")
    assert result.rows == [
        ("id", "BIGINT", False, "PRI(id)", "", ""),
        ("customer", "STRING", True, "", "", ""),
        ("price", "DECIMAL(10, 2)", True, "", "", ""),
        ("ts", "TIMESTAMP(3) *ROWTIME*", True, "", "", "ts - INTERVAL '5' SECOND"),
        ("total", "DECIMAL(21, 2)", True, "", "AS price * 2", ""),
        ("src", "STRING", True, "", "METADATA FROM 'source' VIRTUAL", ""),
    ]
    text = str(result)
    assert text.splitlines()[1] == "|     name |                   type |  null |     key |                         " \
                                   "extras |                watermark |"
    assert "|       id |                 BIGINT | FALSE | PRI(id) |" in text
    assert text.endswith("6 rows in set")
    assert one(env, "DESC big").rows == [("id", "BIGINT", False, "", "", ""),
                                         ("price", "DECIMAL(10, 2)", True, "", "", "")]


def test_show_columns_filters_describe_by_name(env: TableEnvironment) -> None:
    assert [r[0] for r in one(env, "SHOW COLUMNS FROM orders LIKE '%r%'").rows] == ["customer", "price", "src"]
    assert [r[0] for r in one(env, "SHOW COLUMNS IN orders NOT LIKE '%r%'").rows] == ["id", "ts", "total"]


def test_show_create_table_recreates_the_table_without_its_secrets(env: TableEnvironment) -> None:
    ddl = one(env, "SHOW CREATE TABLE orders").message
    assert ddl == """CREATE TABLE `default_catalog`.`default_database`.`orders` (
  `id` BIGINT NOT NULL,
  `customer` STRING COMMENT 'who ordered',
  `price` DECIMAL(10, 2),
  `ts` TIMESTAMP(3),
  `total` AS price * 2,
  `src` STRING METADATA FROM 'source' VIRTUAL,
  WATERMARK FOR `ts` AS ts - INTERVAL '5' SECOND,
  CONSTRAINT `PK_orders` PRIMARY KEY (`id`) NOT ENFORCED
)
COMMENT 'all orders'
PARTITIONED BY (`customer`)
WITH (
  'connector' = 'filesystem',
  'format' = 'json',
  'password' = '******',
  'path' = '/data/orders',
  'token' = '${env:ORDERS_TOKEN}'
)"""
    other = TableEnvironment()
    other.execute_sql(ddl)
    original = env.catalog_manager.get_table(("orders",)).object
    recreated = other.catalog_manager.get_table(("orders",)).object
    assert recreated.schema == original.schema
    assert (recreated.partition_keys, recreated.comment) == (original.partition_keys, original.comment)


def test_show_create_view_and_kind_mismatches(env: TableEnvironment) -> None:
    assert one(env, "SHOW CREATE VIEW big").message == (
        "CREATE VIEW `default_catalog`.`default_database`.`big` (\n  `id`,\n  `price`\n)\n"
        "AS SELECT id, price FROM orders WHERE price > 100")
    with pytest.raises(CatalogError, match="is a view, not a table"):
        one(env, "SHOW CREATE TABLE big")
    with pytest.raises(CatalogError, match="is a table, not a view"):
        one(env, "SHOW CREATE VIEW orders")
    with pytest.raises(CatalogError, match="did you mean `orders`"):
        one(env, "SHOW CREATE TABLE order")


def test_show_current_catalog_and_database(env: TableEnvironment) -> None:
    assert str(one(env, "SHOW CURRENT CATALOG")) == (
        "+----------------------+\n| current catalog name |\n+----------------------+\n"
        "|      default_catalog |\n+----------------------+\n1 row in set")
    env.execute_sql("CREATE DATABASE shop; USE shop")
    assert one(env, "SHOW CURRENT DATABASE").rows == [("shop",)]


def test_show_listings_with_like_and_from(env: TableEnvironment) -> None:
    assert one(env, "SHOW TABLES").rows == [("big",), ("orders",)]
    assert one(env, "SHOW TABLES LIKE 'ord%'").rows == [("orders",)]
    assert one(env, "SHOW TABLES NOT LIKE 'ord%'").rows == [("big",)]
    assert one(env, "SHOW VIEWS").rows == [("big",)]
    env.execute_sql("CREATE DATABASE other; CREATE TABLE other.t (a INT) WITH ('connector' = 'datagen')")
    assert one(env, "SHOW TABLES FROM other").rows == [("t",)]
    assert one(env, "SHOW TABLES IN default_catalog.other").rows == [("t",)]
    assert one(env, "SHOW DATABASES").rows == [("default_database",), ("other",)]
    assert str(one(env, "SHOW TABLES LIKE 'nothing%'")) == "Empty set"


def test_show_functions_has_the_built_ins_and_user_functions(env: TableEnvironment) -> None:
    names = [r[0] for r in one(env, "SHOW FUNCTIONS").rows]
    assert {"upper", "count", "to_timestamp", "tumble_start", "current_watermark"} <= set(names)
    assert not [n for n in names if not n.replace("_", "").isalnum()]  # no operators, no internal names
    env.execute_sql("CREATE TEMPORARY SYSTEM FUNCTION shout AS 'udfs.Shout'")
    assert "shout" in [r[0] for r in one(env, "SHOW FUNCTIONS").rows]
    assert one(env, "SHOW USER FUNCTIONS").rows == [("shout",)]
    assert one(env, "SHOW FUNCTIONS LIKE 'to_ts%'").rows == []


def test_alter_table_set_and_reset_options(env: TableEnvironment) -> None:
    one(env, "ALTER TABLE orders SET ('path' = '/data/orders2', 'source.monitor-interval' = '1 s')")
    options = env.catalog_manager.get_table(("orders",)).object.options_dict
    assert options["path"] == "/data/orders2" and options["source.monitor-interval"] == "1 s"
    one(env, "ALTER TABLE orders RESET ('source.monitor-interval', 'token')")
    options = env.catalog_manager.get_table(("orders",)).object.options_dict
    assert "source.monitor-interval" not in options and "token" not in options
    with pytest.raises(ValidationError, match="option 'pth' is not set on the table; did you mean 'path'"):
        one(env, "ALTER TABLE orders RESET ('pth')")
    with pytest.raises(ValidationError, match="cannot remove 'connector'"):
        one(env, "ALTER TABLE orders RESET ('connector')")


def test_alter_table_add_modify_drop_columns(env: TableEnvironment) -> None:
    one(env, "ALTER TABLE orders ADD (qty INT FIRST, note STRING COMMENT 'free text' AFTER id)")
    one(env, "ALTER TABLE orders ADD amount AS qty * price")
    one(env, "ALTER TABLE orders MODIFY qty BIGINT NOT NULL")
    names = [r[0] for r in one(env, "DESCRIBE orders").rows]
    assert names == ["qty", "id", "note", "customer", "price", "ts", "total", "src", "amount"]
    assert one(env, "DESCRIBE orders").rows[0][1:3] == ("BIGINT", False)
    assert one(env, "DESCRIBE orders").rows[-1][1] == "DECIMAL(30, 2)"  # re-typed: BIGINT * DECIMAL(10, 2)
    one(env, "ALTER TABLE orders DROP (note, amount)")
    assert "note" not in [r[0] for r in one(env, "DESCRIBE orders").rows]
    with pytest.raises(ValidationError, match="column 'qty' already exists"):
        one(env, "ALTER TABLE orders ADD qty INT")
    with pytest.raises(ValidationError, match="cannot drop column 'price': computed column 'total' refers to it"):
        one(env, "ALTER TABLE orders DROP price")
    with pytest.raises(ValidationError, match="it is part of the primary key"):
        one(env, "ALTER TABLE orders DROP id")
    with pytest.raises(ValidationError, match="the table is partitioned by it"):
        one(env, "ALTER TABLE orders DROP customer")
    with pytest.raises(ValidationError, match="column 'prise' does not exist; did you mean 'price'"):
        one(env, "ALTER TABLE orders MODIFY prise INT")
    with pytest.raises(ValidationError, match="column 'nope' not found"):  # validated like CREATE TABLE
        one(env, "ALTER TABLE orders ADD bad AS nope + 1")


def test_alter_table_watermark_and_primary_key(env: TableEnvironment) -> None:
    with pytest.raises(ValidationError, match="already defines a watermark"):
        one(env, "ALTER TABLE orders ADD WATERMARK FOR ts AS ts")
    one(env, "ALTER TABLE orders MODIFY WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE")
    assert one(env, "DESCRIBE orders").rows[3][5] == "ts - INTERVAL '1' MINUTE"
    one(env, "ALTER TABLE orders DROP WATERMARK")
    assert one(env, "DESCRIBE orders").rows[3][1:] == ("TIMESTAMP(3)", True, "", "", "")
    one(env, "ALTER TABLE orders DROP PRIMARY KEY")
    one(env, "ALTER TABLE orders ADD PRIMARY KEY (id, customer) NOT ENFORCED")
    assert one(env, "DESCRIBE orders").rows[1][2:4] == (False, "PRI(id, customer)")


def test_alter_table_rename_column_and_table(env: TableEnvironment) -> None:
    one(env, "ALTER TABLE orders RENAME customer TO buyer")
    assert env.catalog_manager.get_table(("orders",)).object.partition_keys == ("buyer",)
    with pytest.raises(ValidationError, match="the watermark refers to it"):
        one(env, "ALTER TABLE orders RENAME ts TO event_time")
    one(env, "ALTER TABLE orders RENAME TO purchases")
    assert one(env, "SHOW TABLES").rows == [("big",), ("purchases",)]
    with pytest.raises(CatalogError, match="a table or view of that name exists"):
        one(env, "ALTER TABLE purchases RENAME TO big")


def test_alter_table_on_missing_tables_views_and_temporary_tables(env: TableEnvironment) -> None:
    with pytest.raises(CatalogError, match="does not exist; did you mean `orders`"):
        one(env, "ALTER TABLE order SET ('a' = 'b')")
    assert "nothing altered" in one(env, "ALTER TABLE IF EXISTS order SET ('a' = 'b')").message
    with pytest.raises(CatalogError, match="is a view; ALTER TABLE changes tables only"):
        one(env, "ALTER TABLE big SET ('a' = 'b')")
    env.execute_sql("CREATE TEMPORARY TABLE tmp (a INT) WITH ('connector' = 'datagen')")
    one(env, "ALTER TABLE tmp ADD b STRING")
    one(env, "ALTER TABLE tmp RENAME TO tmp2")
    entry = env.catalog_manager.get_table(("tmp2",))
    assert entry.is_temporary and entry.object.schema.column_names() == ["a", "b"]


def test_create_or_replace_table(env: TableEnvironment) -> None:
    one(env, "CREATE OR REPLACE TABLE orders (a INT) WITH ('connector' = 'datagen')")
    assert one(env, "DESCRIBE orders").rows == [("a", "INT", True, "", "", "")]
    one(env, "CREATE OR REPLACE TABLE fresh (a INT) WITH ('connector' = 'datagen')")  # creates when absent
    assert ("fresh",) in one(env, "SHOW TABLES").rows
    with pytest.raises(CatalogError, match="already exists"):
        one(env, "CREATE TABLE fresh (a INT) WITH ('connector' = 'datagen')")
    with pytest.raises(CatalogError, match="is a view; CREATE OR REPLACE TABLE replaces tables only"):
        one(env, "CREATE OR REPLACE TABLE big (a INT) WITH ('connector' = 'datagen')")
    with pytest.raises(SqlParseError, match="CREATE OR REPLACE VIEW is not supported"):
        one(env, "CREATE OR REPLACE VIEW v AS SELECT 1")


def test_display_width_option_cuts_long_values(env: TableEnvironment) -> None:
    env.execute_sql("SET 'table.display.max-column-width' = '10'")
    text = str(one(env, "DESCRIBE orders"))
    assert "|       ts | TIMESTA... |  TRUE |         |            | ts - IN... |" in text
    assert "METADATA FROM" not in text
