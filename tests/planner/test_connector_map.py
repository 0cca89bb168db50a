"""Physical conversion returns the exec DAG and, beside it, the connector of every scan and sink node.

The connectors used to ride on the frozen nodes as hidden attributes that every pass had to copy by hand; a
pass that forgot one made changelog inference fall back to "insert-only" for a source and "accepts
anything" for a sink. Now a missing connector is an error.
"""

from __future__ import annotations

import pytest

from planengine.api import TableEnvironment
from planengine.connectors.blackhole import BlackHoleTableSink
from planengine.errors import InternalError
from planengine.exec import nodes as X
from planengine.exec.base import topological
from planengine.planner.connectors import ConnectorMap
from planengine.sql import parse_script

DDL = """
CREATE TABLE cdc (k STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/tmp/cdc', 'format' = 'debezium-json');
CREATE TABLE totals (k STRING, s BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole');
"""


def plan(statement: str):  # type: ignore[no-untyped-def]
    env = TableEnvironment()
    env.execute_sql(DDL)
    return env.plan_inserts(parse_script(statement))


def test_every_scan_and_sink_of_the_final_dag_finds_its_connector() -> None:
    # Changelog inference, Calc merging and Exchange insertion all rebuild nodes after physical conversion.
    result = plan("INSERT INTO totals SELECT k, SUM(v) FROM cdc GROUP BY k")
    nodes = topological(list(result.sinks))
    scans = [n for n in nodes if isinstance(n, X.TableSourceScan)]
    assert scans and all(result.connectors.source(s).changelog_mode() == s.changelog_mode for s in scans)
    (sink,) = result.sinks
    assert isinstance(result.connectors.sink(sink), BlackHoleTableSink)


def test_a_node_without_a_connector_is_an_error_not_a_weaker_check() -> None:
    result = plan("INSERT INTO totals SELECT k, SUM(v) FROM cdc GROUP BY k")
    (scan,) = [n for n in topological(list(result.sinks)) if isinstance(n, X.TableSourceScan)]
    with pytest.raises(InternalError, match="has no source"):
        ConnectorMap().source(scan)
    with pytest.raises(InternalError, match="has no sink"):
        ConnectorMap().sink(result.sinks[0])
