"""Shared fixtures: a rich table exercising every schema feature, and catalogs to run contracts against."""

from __future__ import annotations

import pytest

from planengine.catalog.file_catalog import FileCatalog
from planengine.catalog.memory import InMemoryCatalog
from planengine.catalog.objects import CatalogFunction, CatalogTable, CatalogView
from planengine.ir.schema import Column, PrimaryKey, ResolvedSchema, WatermarkSpec
from planengine.ir.types import parse_type


def make_table(options: dict[str, str] | None = None, comment: str | None = None) -> CatalogTable:
    """A small table: two physical columns, no extras."""
    schema = ResolvedSchema((Column("id", parse_type("BIGINT NOT NULL")), Column("name", parse_type("STRING"))))
    return CatalogTable(schema, tuple(sorted((options or {"connector": "datagen"}).items())), (), comment)


def make_rich_table() -> CatalogTable:
    """Computed, metadata (plain, keyed, virtual), rowtime and proctime columns, PK, partitions, options."""
    columns = (
        Column("id", parse_type("BIGINT NOT NULL")),
        Column("price", parse_type("DECIMAL(10, 2)"), comment="unit price in EUR"),
        Column("qty", parse_type("INT")),
        Column("total", parse_type("DECIMAL(21, 2)"), kind="computed", expression="`price` * `qty`"),
        Column("ts", parse_type("TIMESTAMP(3) *ROWTIME*")),
        Column("pt", parse_type("TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*"), kind="computed", expression="PROCTIME()"),
        Column("partition", parse_type("INT"), kind="metadata"),
        Column("kafka_offset", parse_type("BIGINT"), kind="metadata", metadata_key="offset", virtual=True),
        Column("headers", parse_type("MAP<STRING, BYTES>"), kind="metadata", virtual=True),
        Column("tags", parse_type("ROW<`a` INT, `b` ARRAY<STRING>>")),
        Column("dt", parse_type("STRING NOT NULL")),
    )
    schema = ResolvedSchema(
        columns,
        (WatermarkSpec("ts", "`ts` - INTERVAL '5' SECOND"),),
        PrimaryKey("PK_id_dt", ("id", "dt")),
    )
    options = {
        "connector": "kafka",
        "topic": "orders",
        "properties.bootstrap.servers": "kafka:9092",
        "format": "json",
        "scan.startup.mode": "earliest-offset",
    }
    return CatalogTable(schema, tuple(sorted(options.items())), ("dt",), "orders from the shop\nsecond line")


def make_view() -> CatalogView:
    schema = ResolvedSchema((Column("id", parse_type("BIGINT NOT NULL")), Column("n", parse_type("BIGINT"))))
    query = "SELECT `id`, COUNT(*) AS `n`\nFROM `default_catalog`.`default_database`.`orders`\nGROUP BY `id`"
    return CatalogView(query, schema, comment="orders per id")


@pytest.fixture
def rich_table() -> CatalogTable:
    return make_rich_table()


@pytest.fixture
def view() -> CatalogView:
    return make_view()


@pytest.fixture
def function() -> CatalogFunction:
    return CatalogFunction("udfs.strings.Shout")


@pytest.fixture(params=["memory", "file"])
def catalog(request: pytest.FixtureRequest, tmp_path):
    """The same behaviour is required of every backend."""
    if request.param == "memory":
        return InMemoryCatalog("c", "db")
    return FileCatalog(tmp_path / "catalog", name="c", default_database="db", environ={})


@pytest.fixture
def small_table():
    """A factory: ``small_table(options=…, comment=…)``."""
    return make_table
