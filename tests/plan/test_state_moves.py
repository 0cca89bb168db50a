"""State moves in plan migration: nodes on the Python transformWithState operator move to their JVM versions.

Pure JSON, no Spark: which nodes ``migrate_plan`` moves and which it keeps, and that the invariants hold (the
end-to-end move of the state is ``tests/runtime/test_state_move.py``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from planengine.plan.migrate import migrate_plan
from planengine.plan.serde import compute_plan_id
from planengine.plan.state_moves import kept_reason, moved_between, state_move
from planengine.plan.topology import Dag, legacy_topology

CORPUS = Path(__file__).parents[1] / "restore_corpus" / "corpus" / "0.1"
CORPUS_V2 = CORPUS / "group_aggregate_v2" / "plan.json"


def _nodes(plan: dict) -> dict[int, dict]:
    return {n["id"]: n for n in plan["nodes"]}


def test_an_engine_0_1_plan_moves_its_python_aggregate_and_keeps_the_native_one() -> None:
    old = json.loads(CORPUS_V2.read_text(encoding="utf-8"))
    new, decisions = migrate_plan(old)
    before, after = _nodes(old), _nodes(new)
    assert (after[3]["type"], after[3]["strategy"]) == ("stream-exec-group-aggregate_3", "JVM")
    assert after[8]["type"] == "stream-exec-group-aggregate_2" and "strategy" not in after[8]  # native: kept
    for key in ("uids", "state", "outputType", "changelogMode", "aggCalls", "grouping"):
        assert after[3][key] == before[3][key]
    assert any(d.startswith("node 3: stream-exec-group-aggregate version 2 (TRANSFORM_WITH_STATE) -> 3 (JVM)")
               for d in decisions)
    assert "node 8: stream-exec-group-aggregate version 2 kept (registered)" in decisions
    assert new["planId"] != old["planId"]
    assert moved_between(before[3], after[3], "TRANSFORM_WITH_STATE") is not None
    assert migrate_plan(new)[0] == new  # a migrated plan has nothing left to move


def test_nodes_without_a_jvm_form_stay_where_they_are() -> None:
    node = {"id": 5, "type": "stream-exec-group-aggregate_2", "strategy": "TRANSFORM_WITH_STATE",
            "state": [{"name": "accumulators"}], "aggCalls": [{"function": "COUNT", "version": 1}]}
    assert state_move(node) is not None
    python_udaf = copy.deepcopy(node)
    python_udaf["aggCalls"] = [{"function": {"identifier": "`c`.`d`.`my_agg`"}, "version": 1}]
    assert state_move(python_udaf) is None
    native = {**node, "strategy": "NATIVE"}
    assert state_move(native) is None
    assert state_move({**node, "type": "stream-exec-group-aggregate_3", "strategy": "TRANSFORM_WITH_STATE"}) is None
    assert state_move({**node, "type": "stream-exec-deduplicate_2"}) is None  # already on the JVM
    assert state_move({**node, "type": "stream-exec-window-rank_1"}) is None  # no JVM version


def test_rows_keeping_python_nodes_move_to_their_jvm_versions_without_a_strategy() -> None:
    old = json.loads((CORPUS / "rank_deduplicate" / "plan.json").read_text(encoding="utf-8"))
    new, decisions = migrate_plan(old)
    before, after = _nodes(old), _nodes(new)
    assert {i: after[i]["type"] for i in (4, 8, 12)} == {
        4: "stream-exec-rank_2", 8: "stream-exec-deduplicate_2", 12: "stream-exec-deduplicate_2"}
    for i in (4, 8, 12):
        assert "strategy" not in after[i]  # only the group aggregate records one
        assert after[i]["uids"] == before[i]["uids"] and after[i]["state"] == before[i]["state"]
        assert moved_between(before[i], after[i]) is not None
    assert "node 4: stream-exec-rank version 1 (TRANSFORM_WITH_STATE) -> 2 (JVM), state rankedRows: the state moves " \
           "from the Python operator to the JVM processor when the migrated plan first starts from a snapshot of " \
           "the old one (uids kept)" in decisions
    assert migrate_plan(new)[0] == new


def test_a_non_equi_join_moves_to_join_3_unless_its_condition_calls_a_user_function() -> None:
    """join_3 evaluates a non-equi condition on the JVM, so the corpus's non-equi join_1 moves with its state; a
    condition with a Python user function keeps the node where it is and the decisions say why."""
    old = json.loads((CORPUS / "joins" / "plan.json").read_text(encoding="utf-8"))
    new, decisions = migrate_plan(old)
    assert _nodes(old)[5]["nonEquiCondition"] is not None
    assert _nodes(new)[5]["type"] == "stream-exec-join_3"
    assert moved_between(_nodes(old)[5], _nodes(new)[5]) is not None
    assert any(d.startswith("node 5: stream-exec-join version 1 (TRANSFORM_WITH_STATE) -> 3 (JVM)") for d in decisions)
    python_join_2 = {**copy.deepcopy(_nodes(old)[5]), "type": "stream-exec-join_2"}
    assert state_move(python_join_2).to_version == 3
    assert state_move({**python_join_2, "nonEquiCondition": None}) is None  # an equi join_2 is on the JVM already
    udf = {"kind": "CALL", "function": {"identifier": "`cat`.`db`.`near`"}, "operands": []}
    python_join_2["nonEquiCondition"]["operands"].append(udf)
    edited = {**old, "nodes": [python_join_2 if n["id"] == 5 else n for n in old["nodes"]]}
    kept, decisions = migrate_plan({**edited, "planId": compute_plan_id(edited)})
    assert _nodes(kept)[5]["type"] == "stream-exec-join_2" and state_move(python_join_2) is None
    assert ("node 5: stream-exec-join version 2 kept on the Python operator with its state: the non-equi join "
            "condition calls the user function `cat`.`db`.`near` (the JVM join cannot call Python)") in decisions


def test_a_sink_moves_only_with_an_upsert_materializer() -> None:
    sink = {"id": 6, "type": "stream-exec-sink_1", "state": [{"name": "materializedRows"}],
            "requireUpsertMaterialize": True}
    assert state_move(sink) is not None and state_move(sink).to_version == 2
    assert state_move({**sink, "requireUpsertMaterialize": False, "state": []}) is None


def test_a_legacy_plans_query_keeps_the_uid_of_a_moved_sink() -> None:
    """Plans without recorded queries name each sink's query after the sink's uid: the recorded one, so a sink
    moved to version 2 keeps the checkpoint its state was written in."""
    plan = {"nodes": [{"id": 1, "type": "stream-exec-values_1"},
                      {"id": 2, "type": "stream-exec-sink_2", "uids": ["2_stream-exec-sink-1_sink",
                                                                       "2_stream-exec-sink-1_upsert-materializer"]}],
            "edges": [{"source": 1, "target": 2}]}
    assert legacy_topology(Dag.from_plan(plan)).queries[0].uid == "2_stream-exec-sink-1_sink"


def test_over_and_session_nodes_move_when_their_jvm_version_takes_them() -> None:
    over = _nodes(json.loads((CORPUS / "over_aggregate" / "plan.json").read_text(encoding="utf-8")))[4]
    assert state_move(over).describe() == ("node 4: stream-exec-over-aggregate version 1 (TRANSFORM_WITH_STATE) -> "
                                           "3 (JVM), state pendingRows, accumulators")
    distinct = copy.deepcopy(over)
    distinct["aggCalls"][0]["distinct"] = True
    assert state_move(distinct).to_version == 3  # version 3 runs DISTINCT on the JVM
    assert state_move({**distinct, "type": "stream-exec-over-aggregate_2"}).to_version == 3  # Python in _2
    udaf = copy.deepcopy(over)
    udaf["aggCalls"][1]["function"] = {"identifier": "`c`.`d`.`my_agg`"}
    assert "a Python function, which the JVM processor cannot call" in kept_reason(udaf) and state_move(udaf) is None
    non_time = {**over, "orderBy": [{"index": 1, "isAscending": True}]}  # a_int: INT, not a time attribute
    assert kept_reason(non_time).startswith("ordered by a non-time column") and state_move(non_time) is None
    assert state_move({**over, "type": "stream-exec-over-aggregate_2"}) is None  # already on the JVM
    assert kept_reason({**over, "type": "stream-exec-over-aggregate_2"}) is None
    # LAG runs on Python before version 4: every version moves to 4 with it, nothing without it moves to 4
    lag = copy.deepcopy(over)
    lag["aggCalls"][1] = {"name": "w", "function": "LAG", "version": 1, "argList": [1], "type": "INT"}
    assert [state_move({**lag, "type": f"stream-exec-over-aggregate_{v}"}).describe() for v in (1, 2, 3)] == [
        f"node 4: stream-exec-over-aggregate version {v} (TRANSFORM_WITH_STATE) -> 4 (JVM), state pendingRows, "
        "accumulators" for v in (1, 2, 3)]
    assert state_move({**over, "type": "stream-exec-over-aggregate_3"}) is None  # on the JVM already
    with_map = {**lag, "outputType": lag["outputType"].replace("`a_int` INT", "`a_int` MAP<DOUBLE, DOUBLE>")}
    assert kept_reason(with_map).startswith("the input's field 1 is MAP<DOUBLE, DOUBLE>, which Spark's typed")
    lag_udaf = copy.deepcopy(udaf)
    lag_udaf["aggCalls"].append(lag["aggCalls"][1])
    assert "the JVM processor cannot call" in kept_reason({**lag_udaf, "type": "stream-exec-over-aggregate_3"})

    session = {"id": 5, "type": "stream-exec-window-aggregate_2", "state": [{"name": "windowAccumulators"}],
               "grouping": [1], "aggCalls": [{"function": "COUNT", "version": 1}],
               "windowing": {"strategy": "SESSION", "timeAttributeIndex": 3, "gap": "PT5S", "partitionKeys": [0]}}
    assert state_move(session).to_version == 3
    over_all_rows = {**session, "windowing": {**session["windowing"], "partitionKeys": []}}
    assert state_move(over_all_rows).to_version == 3  # a session over all rows, grouped by a key
    legacy = {**session, "type": "stream-exec-group-window-aggregate_2", "windowing": None,
              "window": {"spec": {**session["windowing"], "partitionKeys": []}}}
    assert state_move(legacy) is None  # a legacy session window is per group key: native
    assert state_move({**legacy, "window": {"spec": session["windowing"]}}).to_version == 3
    by_grouping = {**session, "windowing": {**session["windowing"], "partitionKeys": [1]}}
    assert state_move(by_grouping) is None and kept_reason(by_grouping) is None  # native: nothing to move
    tumble = {**session, "windowing": {"strategy": "TUMBLE", "timeAttributeIndex": 3, "size": "PT5S"}}
    assert state_move(tumble) is None and kept_reason(tumble) is None
    udaf_session = {**session, "aggCalls": [{"function": {"identifier": "`c`.`d`.`my_agg`"}, "version": 1}]}
    assert "the JVM processor cannot call" in kept_reason(udaf_session) and state_move(udaf_session) is None
    # No move to version 4: it runs a version-3 session on the JVM identically (relabelling gains nothing), and a
    # version-2 or -3 session on the Python operator keeps its version with its pickles (only it reads them).
    for version in (3, 4):
        for node in (session, udaf_session):
            moved = {**node, "type": f"stream-exec-window-aggregate_{version}"}
            assert state_move(moved) is None and kept_reason(moved) is None


def test_rows_holding_a_map_with_non_string_keys_keep_their_python_operator() -> None:
    """Spark's typed transformWithState state has no form for a MAP whose key is not a string: a group aggregate or
    a join whose state would hold one stays on Python (its target version runs it there too)."""
    agg = {"id": 5, "type": "stream-exec-group-aggregate_2", "strategy": "TRANSFORM_WITH_STATE",
           "state": [{"name": "accumulators"}], "aggCalls": [{"function": "LAST_VALUE", "version": 1}],
           "outputType": "ROW<`k` STRING, `m` MAP<INT, INT>>"}
    assert state_move(agg) is None
    assert kept_reason(agg) == ("field m is MAP<INT, INT>, which Spark's typed transformWithState state cannot hold "
                                "(it has no Avro form for a MAP with non-STRING keys or an INTERVAL)")
    assert state_move({**agg, "outputType": "ROW<`k` STRING, `m` MAP<STRING, INT>>"}) is not None
    join = {"id": 4, "type": "stream-exec-join_1", "state": [{"name": "leftRows"}, {"name": "rightRows"}],
            "outputType": "ROW<`a` INT, `m` ARRAY<MAP<DOUBLE, DOUBLE>>, `b` INT>"}
    assert state_move(join) is None and "field m is ARRAY<MAP<DOUBLE, DOUBLE>>" in kept_reason(join)
    for name, version in [("rank", 1), ("deduplicate", 1), ("changelog-normalize", 1), ("sort-limit", 2)]:
        rows = {"id": 6, "type": f"stream-exec-{name}_{version}", "state": [{"name": "rows"}], "limit": 3,
                "outputType": "ROW<`k` STRING, `m` MULTISET<BIGINT>>"}
        assert state_move(rows) is None and kept_reason(rows).startswith("field m is MULTISET<BIGINT>"), name
        assert state_move({**rows, "outputType": "ROW<`k` STRING, `m` MULTISET<STRING>>"}) is not None, name
