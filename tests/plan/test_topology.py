"""The shared topology as data: which queries a plan records, and that every node runs in exactly one of them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.errors import PlanError
from planengine.plan.migrate import migrate_plan
from planengine.plan.restore import INCOMPATIBLE, CheckReport, check_plan
from planengine.plan.serde import compute_plan_id
from planengine.plan.topology import Dag, Topology, plan_topology
from tests.golden.compile_programs import PLANS

SCAN, CALC, AGG, SINK = ("stream-exec-table-source-scan_1", "stream-exec-calc_1", "stream-exec-group-aggregate_2",
                         "stream-exec-sink_1")


def dag(edges: dict[int, tuple[int, ...]], types: dict[int, str], batch: set[int]) -> Dag:
    return Dag.of(sorted(types), edges, types, batch)


def summary(topology: Topology | None) -> list[tuple[str, int, tuple[int, ...], bool]] | None:
    return None if topology is None else [(q.uid.split("_", 1)[1], q.head, q.sinks, q.channel)
                                          for q in topology.queries]


def test_a_dag_without_a_shared_node_keeps_one_query_per_sink() -> None:
    assert plan_topology(dag({2: (1,), 3: (2,)}, {1: SCAN, 2: CALC, 3: SINK}, {2, 3})) is None


def test_an_aggregate_read_by_two_sinks_is_one_fan_out_query_writing_both() -> None:
    d = dag({2: (1,), 3: (2,), 4: (3,), 5: (2,)}, {1: SCAN, 2: AGG, 3: CALC, 4: SINK, 5: SINK}, {3, 4, 5})
    assert summary(plan_topology(d)) == [("stream-exec-group-aggregate-2_fan-out", 2, (4, 5), False)]


def test_stateful_consumers_of_a_shared_node_read_its_channel_in_queries_of_their_own() -> None:
    # scan -> agg A -> sink 3; scan -> agg B -> sink 5; scan -> calc -> sink 7
    d = dag({2: (1,), 3: (2,), 4: (1,), 5: (4,), 6: (1,), 7: (6,)},
            {1: SCAN, 2: AGG, 3: SINK, 4: AGG, 5: SINK, 6: CALC, 7: SINK}, {3, 5, 6, 7})
    topology = plan_topology(d)
    assert summary(topology) == [("stream-exec-table-source-scan-1_fan-out", 1, (7,), True),
                                 ("stream-exec-sink-1_sink", 3, (3,), False),
                                 ("stream-exec-sink-1_sink", 5, (5,), False)]
    assert topology is not None
    consumer = topology.queries[1]
    assert topology.channel_inputs(d, consumer) == [1] and topology.streaming_nodes(d, consumer) == [2, 3]


def test_a_stateless_node_shared_below_a_stateful_one_makes_the_stateful_one_the_head() -> None:
    # agg -> calc (shared) -> sinks 4 and 5: the calc runs per micro-batch, once, in the aggregate's query
    d = dag({2: (1,), 3: (2,), 4: (3,), 5: (3,)}, {1: SCAN, 2: AGG, 3: CALC, 4: SINK, 5: SINK}, {3, 4, 5})
    topology = plan_topology(d)
    assert summary(topology) == [("stream-exec-group-aggregate-2_fan-out", 2, (4, 5), False)]
    assert topology is not None and topology.batch_nodes(d, topology.queries[0]) == [3, 4, 5]


def test_a_sink_that_cannot_write_micro_batches_gets_its_own_query_over_the_channel() -> None:
    d = dag({2: (1,), 3: (2,), 4: (2,)}, {1: SCAN, 2: AGG, 3: SINK, 4: SINK}, {3})  # sink 4: no batch writer
    assert summary(plan_topology(d)) == [("stream-exec-group-aggregate-2_fan-out", 2, (3,), True),
                                         ("stream-exec-sink-1_sink", 4, (4,), False)]


@pytest.mark.parametrize("path", sorted(PLANS.glob("*.json")), ids=lambda p: p.stem)
def test_every_golden_plan_runs_each_node_in_exactly_one_query(path: Path) -> None:
    plan = json.loads(path.read_text())
    topology = Topology.from_plan(plan)  # checks: each node in one query, each sink written once
    shared = any(len(s) > 1 for s in _sinks_per_node(plan).values())
    assert (topology is not None) == shared, "a plan records queries exactly when a node feeds several sinks"
    assert plan["formatVersion"] == (2 if shared else 1)


def _sinks_per_node(plan: dict) -> dict[int, set[int]]:
    consumers: dict[int, list[int]] = {}
    for e in plan["edges"]:
        consumers.setdefault(e["source"], []).append(e["target"])
    out: dict[int, set[int]] = {}
    for node in reversed(plan["nodes"]):
        nid = node["id"]
        out[nid] = {nid} if nid not in consumers else set().union(*(out[c] for c in consumers[nid]))
    return out


def test_queries_that_compute_a_node_twice_are_refused() -> None:
    plan = json.loads((PLANS / "statement_set_shared_aggregate.json").read_text())
    edited = copy.deepcopy(plan)
    edited["queries"].append({"uid": "7_stream-exec-sink-2_sink", "head": 7, "sinks": [7]})
    edited["planId"] = compute_plan_id(edited)
    with pytest.raises(PlanError, match="both compute node"):
        Topology.from_plan(edited)


def test_migration_keeps_the_recorded_queries_and_old_engines_refuse_format_2() -> None:
    plan = json.loads((PLANS / "statement_set_shared_aggregate.json").read_text())
    migrated, _ = migrate_plan(plan)
    assert migrated["queries"] == plan["queries"] and migrated["formatVersion"] == 2
    older = copy.deepcopy(plan)
    older["formatVersion"] = 3
    older["planId"] = compute_plan_id(older)
    assert check_plan(older).status == INCOMPATIBLE


def test_shared_queries_off_compiles_one_query_per_sink_as_format_1() -> None:
    from tests.planner.rules.fixture_runner import PRELUDE

    sql = (Path(__file__).parents[1] / "golden" / "programs" / "statement_set_shared_aggregate.sql").read_text()
    on, off = TableEnvironment(), TableEnvironment({"planengine.plan.shared-queries": "false"})
    for env in (on, off):
        env.execute_sql(PRELUDE.read_text())
    shared, legacy = on.compile_plan_sql(sql), off.compile_plan_sql(sql)
    assert "queries" in shared.data and "queries" not in legacy.data and legacy.data["formatVersion"] == 1
    assert "== 1 query (shared topology" in shared.explain()
    assert "== 2 queries (one per sink" in legacy.explain()
    assert legacy.explain().splitlines()[-1] == ("8_stream-exec-sink-2_sink: computes #1 (again), #2 (again), "
                                                 "#3 (again), #4 (again), #5 (again), #6 (again), #8")


def test_the_snapshot_check_follows_the_recorded_queries_and_refuses_a_changed_topology(tmp_path: Path) -> None:
    """``check --snapshot``'s lineage: a fan-out query holds its shared aggregate's state; a snapshot of the same
    statement set run one query per sink keeps the aggregate's state under the sink queries' uids, which the
    shared plan does not have, so restoring it under the shared plan is refused rather than starting empty."""
    from types import SimpleNamespace

    from planengine.runtime.state.lineage import stateful_lineage
    from planengine.runtime.state_check import _check_lineage

    def compile_plan(shared: str) -> dict:
        env = TableEnvironment({"planengine.plan.shared-queries": shared})
        env.execute_sql(f"""
            CREATE TABLE src (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/src',
              'format' = 'json');
            CREATE TABLE a (k STRING, c BIGINT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/a',
              'format' = 'changelog-json');
            CREATE TABLE b (k STRING, c BIGINT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/b',
              'format' = 'changelog-json')""")
        return env.compile_plan_sql("""EXECUTE STATEMENT SET BEGIN
            INSERT INTO a SELECT k, COUNT(*) FROM src GROUP BY k;
            INSERT INTO b SELECT k, COUNT(*) * 2 FROM src GROUP BY k;
            END;""").data

    shared, per_sink = compile_plan("true"), compile_plan("false")
    aggregate = [(n["id"], n["type"], tuple(s["name"] for s in n["state"])) for n in shared["nodes"] if n.get("state")]
    assert len(aggregate) == 1
    assert stateful_lineage(shared) == {shared["queries"][0]["uid"]: aggregate}
    sink_queries = stateful_lineage(per_sink)
    assert len(sink_queries) == 2 and all(len(ops) == 1 for ops in sink_queries.values())

    report = CheckReport(plan_id=shared["planId"])
    assert not _check_lineage(per_sink, shared, SimpleNamespace(last_batch_ids=dict.fromkeys(sink_queries, 0)),
                              report)
    assert [r["message"] for r in report.reasons if r["status"] == INCOMPATIBLE] == [
        f"the snapshot holds state of query {uid}, which the plan no longer has" for uid in sorted(sink_queries)]

