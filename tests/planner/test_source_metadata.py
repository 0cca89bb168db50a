"""METADATA columns at compile time: the scan's ``ReadingMetadata`` ability, and clear refusals."""

from __future__ import annotations

import json

import pytest

from planengine.api import TableEnvironment
from planengine.errors import ValidationError

KAFKA = "'connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'localhost:9092', 'format' = 'json'"


def _compile(columns: str, options: str = KAFKA) -> dict:
    env = TableEnvironment()
    env.execute_sql(f"CREATE TABLE src ({columns}) WITH ({options});"
                    "CREATE TABLE snk (a BIGINT, b STRING) WITH ('connector' = 'blackhole');")
    return json.loads(env.compile_plan_sql("INSERT INTO snk SELECT * FROM src").as_json())


def test_the_scan_asks_for_the_keys_in_the_sources_order_and_the_plan_records_them() -> None:
    plan = _compile("o BIGINT METADATA FROM 'offset' VIRTUAL, t STRING METADATA FROM 'topic'")
    scan = next(n for n in plan["nodes"] if n["type"].startswith("stream-exec-table-source-scan"))
    (ability,) = scan["abilities"]
    assert ability["type"] == "ReadingMetadata"
    assert ability["metadataKeys"] == ["topic", "offset"]  # Kafka lists topic before offset, as Flink asks
    calc = next(n for n in plan["nodes"] if n["type"].startswith("stream-exec-calc"))
    assert [e["inputIndex"] for e in calc["projection"]] == [1, 0]  # back in declared order


@pytest.mark.parametrize(("columns", "options", "says"), [
    ("a BIGINT METADATA FROM 'nope', b STRING", KAFKA, "reads metadata 'nope', which its connector does not"),
    ("a BIGINT, b STRING METADATA", KAFKA, "reads metadata 'b'"),
    ("a BIGINT METADATA FROM 'offset', b STRING",
     "'connector' = 'filesystem', 'path' = '/tmp/x', 'format' = 'json'", "its connector provides no metadata"),
])
def test_metadata_a_connector_does_not_offer_is_refused_naming_the_column(columns: str, options: str,
                                                                          says: str) -> None:
    with pytest.raises(ValidationError, match=says) as refused:
        _compile(columns, options)
    assert "`a`" in str(refused.value) or "`b`" in str(refused.value)
