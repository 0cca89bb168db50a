"""``planengine check --plan P --snapshot S``: can the plan's queries restore the snapshot's state?

Two levels, cheapest first:

* **plan lineage** (when the snapshot's plan differs): per query (the plan's recorded queries, or one per sink
  named by the sink's uid), the stateful nodes it computes must be those of the snapshot's plan (same node id,
  exec node name and state names); a query of the snapshot that the plan no longer has would lose its state
  (so does a plan recompiled into another topology: the state lives under the old queries' uids);
* **Spark state layout**: what Spark stored per query (stateful operator ids and names, state stores and
  column families, key/value schemas with nullability, partitions; ``storage/checkpoint_layout.py``) against what *this*
  engine creates for the same plan, found by running every query once over empty input (``probe.py``),
  compared by Spark's own restore rules (``compare.py``). This catches what the plan cannot show: a Spark
  upgrade that changes a stored schema (Spark 4.2 stores the interval join's key bucket NOT NULL, 4.3
  nullable) or the operator order, with the plan unchanged.

Every difference goes into the ``CheckReport`` with the query, operator id, state and field, and what to
do; the probe costs one streaming batch per query (a few seconds each, mostly Python worker start-up for
``transformWithState``) and is skipped when the lineage already failed or nothing holds state.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from planengine.plan.catalog_objects import PlanSession
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.restore import COMPATIBLE, INCOMPATIBLE, CheckReport
from planengine.plan.state_moves import (
    JVM_OPERATOR,
    PYTHON_OPERATORS,
    StateMove,
    moved_between,
    restored_strategies,
    user_state,
)
from planengine.runtime.engine.executor import unsupported_nodes
from planengine.runtime.engine.session import get_spark
from planengine.runtime.state.lineage import stateful_lineage
from planengine.runtime.state_check.compare import ADVICE, compare_layouts
from planengine.runtime.state_check.probe import expected_layouts, stored_session_conf
from planengine.runtime.storage.checkpoint_layout import LayoutError, read_layout
from planengine.runtime.storage.job_root import JobRoot
from planengine.runtime.storage.object_store import is_object_store
from planengine.runtime.storage.snapshots import read_snapshot

log = logging.getLogger("planengine.runtime.state_check")


def check_snapshot_state(plan_json: dict[str, Any], snapshot_dir: str, report: CheckReport, *,
                         session: PlanSession | None = None, spark: Any = None) -> None:
    """Add to ``report`` everything that keeps this engine from restoring ``snapshot_dir`` under ``plan_json``.

    Runtime support of the plan's nodes is the caller's check (``commands/check.py``); a plan with a node
    this engine cannot run is not probed.
    """
    if is_object_store(snapshot_dir):
        _check_store_snapshot(plan_json, snapshot_dir, report)
        return
    info = read_snapshot(snapshot_dir)
    if not info.complete:
        report.add(INCOMPATIBLE, f"snapshot {snapshot_dir} is incomplete: {info.problem}",
                   hint="restore from another snapshot")
        return
    old_plan = json.loads(Path(info.plan_path).read_text(encoding="utf-8"))
    moves = state_moves_between(old_plan, plan_json)
    lineage_ok = old_plan.get("planId") == plan_json.get("planId") or _check_lineage(old_plan, plan_json, info,
                                                                                       report, moves)
    stored = _stored_layouts(info, report)
    if stored is None or not lineage_ok or unsupported_nodes(plan_json) or report.status != COMPATIBLE:
        # Already incompatible: a probe would only repeat it, at the cost of a Spark batch per query. A plan
        # that needs migration cannot be restored as it is; the state is checked again with the migrated plan.
        return
    if not any(layout["operators"] for layout in stored.values()) and not _declares_state(plan_json):
        return
    _compare_with_probe(plan_json, stored, info, report, session or PlanSession(), spark, moves)


def _check_store_snapshot(plan_json: dict[str, Any], uri: str, report: CheckReport) -> None:
    """``check --snapshot s3a://…/snapshots/<id>`` (the operator's rollback check of an object-store job): the
    snapshot is complete and the plan keeps its stateful lineage, as for a directory. The state layout is not
    compared: a store snapshot's manifest records none yet, and reading it means a Spark probe over the store's
    files; the report says so, and a layout that does not fit fails the start, which the operator rolls back."""
    root_uri, found, snapshot_id = uri.rstrip("/").rpartition("/snapshots/")
    if not found:
        report.add(INCOMPATIBLE, f"{uri} is not a snapshot of a job root", hint="name s3a://<bucket>/<root>/snapshots/<id>")
        return
    root = JobRoot(root_uri)
    info = root.snapshot(snapshot_id)
    if not info.complete:
        report.add(INCOMPATIBLE, f"snapshot {uri} is incomplete: {info.problem}", hint="restore from another snapshot")
        return
    old_plan = json.loads(root.snapshot_plan_text(snapshot_id))
    moves = state_moves_between(old_plan, plan_json)
    if old_plan.get("planId") == plan_json.get("planId") or _check_lineage(old_plan, plan_json, info, report, moves):
        report.add(COMPATIBLE, f"the state layout of {uri} was not compared with this plan's (a snapshot on an object "
                               "store records none yet); its stateful lineage matches")


def state_moves_between(old_plan: dict[str, Any], plan_json: dict[str, Any]) -> dict[int, StateMove]:
    """Node id -> the state move (``planengine.plan.state_moves``) that turned the snapshot's node into the
    plan's: such a node changed its type and Spark operator on purpose, and its state is converted at start."""
    if old_plan.get("planId") == plan_json.get("planId"):
        return {}
    old_nodes = {n.get("id"): n for n in old_plan.get("nodes", [])}
    try:
        strategies = restored_strategies(old_plan)
    except Exception:  # an unreadable old plan has no moves; the lineage check says what differs
        strategies = {}
    out = {}
    for node in plan_json.get("nodes", []):
        old = old_nodes.get(node.get("id"))
        move = moved_between(old, node, strategies.get(int(node["id"]))) if old is not None else None
        if move is not None:
            out[move.node_id] = move
    return out


def _check_lineage(old_plan: dict[str, Any], plan_json: dict[str, Any], info: Any, report: CheckReport,
                   moves: dict[int, StateMove] | None = None) -> bool:
    before = len(report.reasons)
    old, new = stateful_lineage(old_plan), stateful_lineage(plan_json)
    new_types = {n["id"]: str(n["type"]) for n in plan_json.get("nodes", [])}
    for uid, operators in old.items():  # a moved node is the same stateful node under its new type
        old[uid] = [(i, new_types[i] if moves and i in moves else t, s) for i, t, s in operators]
    snapshot_queries = set(info.last_batch_ids)
    for uid in sorted(snapshot_queries - set(new)):
        if old.get(uid):
            report.add(INCOMPATIBLE, f"the snapshot holds state of query {uid}, which the plan no longer has",
                       hint="keep the sink in the plan, or start without the snapshot (state is lost)")
    for uid, operators in sorted(new.items()):
        if uid not in snapshot_queries:
            continue
        previous = old.get(uid, [])
        if previous != operators:
            report.add(INCOMPATIBLE,
                       f"query {uid}: stateful operators changed from {_describe(previous)} to {_describe(operators)}",
                       hint="Spark addresses state by operator position; migrate with the old topology or start "
                            "the query without state")
    return len(report.reasons) == before


def _stored_layouts(info: Any, report: CheckReport) -> dict[str, dict[str, Any]] | None:
    """Query uid -> stored layout, for the queries that committed a batch (the others restore nothing).

    Read from the checkpoint files, which are what Spark will read; the manifest's record (written when the
    snapshot was taken) only serves to notice a snapshot changed since."""
    out: dict[str, dict[str, Any]] = {}
    for uid, last in sorted(info.last_batch_ids.items()):
        if last < 0:
            continue
        try:
            out[uid] = read_layout(info.checkpoint_dir(uid))
        except (LayoutError, OSError) as error:
            report.add(INCOMPATIBLE, f"query {uid}: this engine cannot read the snapshot's state layout: {error}",
                       hint=ADVICE)
            return None
        recorded = ((info.manifest or {}).get("queries", {}).get(uid) or {}).get("stateLayout")
        if recorded is not None and recorded != out[uid]:
            report.add(COMPATIBLE, f"query {uid}: the checkpoint's state files differ from the layout recorded in "
                                   "the snapshot's manifest (the snapshot changed after it was taken); judged by "
                                   "the files")
    return out


def _declares_state(plan_json: dict[str, Any]) -> bool:
    return any(node.get("state") for node in plan_json.get("nodes", []))


def _compare_with_probe(plan_json: dict[str, Any], stored: dict[str, dict[str, Any]], info: Any,
                        report: CheckReport, session: PlanSession, spark: Any,
                        moves: dict[int, StateMove] | None = None) -> None:
    if spark is None:
        spark = get_spark()
    began = time.monotonic()
    committed = [uid for uid in stored if info.last_batch_ids.get(uid, -1) >= 0]
    restored_conf = stored_session_conf(info.checkpoint_dir(committed[0])) if committed else None
    try:
        probe = expected_layouts(CompiledPlan(plan_json, session), spark, restored_conf)
    except Exception as error:  # the plan cannot even start here: the handover would fail the same way
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        report.add(INCOMPATIBLE, f"this engine could not run the plan's queries over empty input to learn their "
                                 f"state layout: {first[:500]}", hint=ADVICE)
        return
    log.info("state layout probe of %d queries took %.1f s", len(probe.layouts), time.monotonic() - began)
    for note in probe.notes:
        report.add(COMPATIBLE, note)
    lineage = stateful_lineage(plan_json)
    for uid, layout in stored.items():
        expected = probe.layouts.get(uid)
        query_moves = [moves[i] for i, _, _ in lineage.get(uid, []) if moves and i in moves]
        if expected is not None and query_moves:
            layout, expected = _explain_moves(uid, query_moves, layout, expected, info, report, spark)
        if expected is None:
            if layout["operators"]:
                report.add(INCOMPATIBLE, f"query {uid} holds state in the snapshot but this plan does not run it",
                           hint=ADVICE)
            continue
        for finding in compare_layouts(uid, layout, expected):
            report.add(finding.status, finding.message, hint=finding.hint)


def _explain_moves(uid: str, moves: list[StateMove], stored: dict[str, Any], expected: dict[str, Any], info: Any,
                   report: CheckReport, spark: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Report what each state move converts (node, versions, Spark operator, state rows) and take the moved
    operators out of the layout comparison: their Python layout is replaced by the JVM one at start."""
    old_ops, new_ops = dict(stored.get("operators", {})), dict(expected.get("operators", {}))
    python_ops = [op for op, meta in sorted(old_ops.items(), key=lambda kv: int(kv[0]))
                  if meta.get("name") in PYTHON_OPERATORS and (new_ops.get(op) or {}).get("name") == JVM_OPERATOR]
    # Each move takes the Python operator whose state variables are the node's (Spark's ids do not name nodes).
    pairs = [(move, [op for op in python_ops if _holds_state_of(old_ops[op], move)]) for move in moves]
    if len(python_ops) != len(moves) or any(len(ops) != 1 for _, ops in pairs) or \
            len({ops[0] for _, ops in pairs}) != len(pairs):
        report.add(INCOMPATIBLE, f"query {uid}: {len(moves)} node(s) move their state to the JVM processor "
                                 f"({', '.join(str(m.node_id) for m in moves)}) but the snapshot has "
                                 f"{len(python_ops)} Python operator(s) at positions the JVM processor takes, not "
                                 "one per moved node with its state variables",
                   hint="restore the snapshot with the plan that wrote it")
        return stored, expected
    checkpoint = info.checkpoint_dir(uid)
    for move, (op,) in pairs:
        created = _state_names(old_ops[op])
        counts = []
        for variable in move.state:
            if variable not in created:  # a variable the Python operator never created
                continue
            try:
                rows = (spark.read.format("statestore").option("operatorId", int(op))
                        .option("stateVarName", variable).load(str(checkpoint)).count())
            except Exception as error:  # e.g. a copied snapshot whose schema file paths name its origin
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                counts.append(f"{variable} not readable here ({first[:200]}); the run's fork reads it")
                continue
            counts.append(f"{rows} rows in {variable}")
        report.add(COMPATIBLE, f"query {uid}, Spark operator {op}: state migration of {move.describe()}: "
                               f"{'; '.join(counts) or 'no rows'} move from {old_ops[op].get('name')} to "
                               f"{JVM_OPERATOR} when the run starts")
        old_ops.pop(op)
        new_ops.pop(op)
    return {**stored, "operators": old_ops}, {**expected, "operators": new_ops}


def _state_names(operator: dict[str, Any]) -> set[str]:
    """The user state variables a stored transformWithState operator declares (Spark's internal ones left out)."""
    props = operator.get("properties") or {}
    if not isinstance(props, dict):
        return set()
    return set(user_state(v.get("stateName") for v in props.get("stateVariables", [])))


def _holds_state_of(operator: dict[str, Any], move: StateMove) -> bool:
    """Whether a stored transformWithState operator's state variables are (some of) the moved node's."""
    names = _state_names(operator)
    return bool(names) and names <= set(move.state)


def _describe(ops: list[tuple[int, str, tuple[str, ...]]]) -> str:
    return "[" + ", ".join(f"{i}:{t}({', '.join(s)})" for i, t, s in ops) + "]" if ops else "[]"


def state_operators(spark: Any, checkpoint: str) -> list[dict[str, Any]]:
    """Spark's ``state-metadata`` rows for one query checkpoint (operator id, name, store, partitions)."""
    if not (Path(checkpoint) / "state").is_dir():
        return []
    rows = spark.read.format("state-metadata").load(checkpoint).collect()
    return [r.asDict(recursive=True) for r in rows]
