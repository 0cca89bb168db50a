"""State moves in plan migration: Python transformWithState group aggregates move to the JVM version.

Pure JSON, no Spark: which nodes ``migrate_plan`` moves and which it keeps, and that the invariants hold (the
end-to-end move of the state is ``tests/runtime/test_state_move.py``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from planengine.plan.migrate import migrate_plan
from planengine.plan.state_moves import moved_between, state_move

CORPUS_V2 = Path(__file__).parents[1] / "restore_corpus" / "corpus" / "0.1" / "group_aggregate_v2" / "plan.json"


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
    assert state_move({**node, "type": "stream-exec-deduplicate_1"}) is None
