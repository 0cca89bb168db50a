"""``planengine check --plan P --snapshot S``: can the plan's queries restore the snapshot's state?

Two levels, cheapest first:

* **plan lineage** (when the snapshot's plan differs): per query (the plan's recorded queries, or one per sink
  named by the sink's uid), the stateful nodes it computes must be those of the snapshot's plan (same node id,
  exec node name and state names); a query of the snapshot that the plan no longer has would lose its state
  (so does a plan recompiled into another topology: the state lives under the old queries' uids);
* **Spark state layout**: what Spark stored per query (stateful operator ids and names, state stores and
  column families, key/value schemas with nullability, partitions; ``layout.py``) against what *this*
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
from planengine.plan.restore import COMPATIBLE, INCOMPATIBLE, CheckReport
from planengine.plan.topology import Dag, Topology, legacy_topology
from planengine.runtime.state_check.compare import ADVICE, compare_layouts
from planengine.runtime.state_check.layout import LayoutError, read_layout

log = logging.getLogger("planengine.runtime.state_check")


def stateful_lineage(plan_json: dict[str, Any]) -> dict[str, list[tuple[int, str, tuple[str, ...]]]]:
    """Query uid -> the stateful nodes (id, type, state names) the query computes, by id: the plan's recorded
    queries (a fan-out query holds the state of everything in its streaming part, a channel consumer only what
    lies below the channel), or one query per sink holding everything upstream of the sink."""
    nodes = {int(n["id"]): n for n in plan_json.get("nodes", [])}
    dag = Dag.from_plan(plan_json)
    topology = Topology.from_plan(plan_json) or legacy_topology(dag)
    out: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {}
    for query in topology.queries:
        found = [(n, str(nodes[n]["type"]), tuple(s["name"] for s in nodes[n]["state"]))
                 for n in topology.streaming_nodes(dag, query) if nodes[n].get("state")]
        out[query.uid] = sorted(found)
    return out


def check_snapshot_state(plan_json: dict[str, Any], snapshot_dir: str, report: CheckReport, *,
                         session: PlanSession | None = None, spark: Any = None) -> None:
    """Add to ``report`` everything that keeps this engine from restoring ``snapshot_dir`` under ``plan_json``.

    Runtime support of the plan's nodes is the caller's check (``commands/check.py``); a plan with a node
    this engine cannot run is not probed.
    """
    from planengine.runtime.executor import unsupported_nodes
    from planengine.runtime.snapshots import read_snapshot

    info = read_snapshot(snapshot_dir)
    if not info.complete:
        report.add(INCOMPATIBLE, f"snapshot {snapshot_dir} is incomplete: {info.problem}",
                   hint="restore from another snapshot")
        return
    old_plan = json.loads(Path(info.plan_path).read_text(encoding="utf-8"))
    lineage_ok = old_plan.get("planId") == plan_json.get("planId") or _check_lineage(old_plan, plan_json, info,
                                                                                       report)
    stored = _stored_layouts(info, report)
    if stored is None or not lineage_ok or unsupported_nodes(plan_json) or report.status != COMPATIBLE:
        # Already incompatible: a probe would only repeat it, at the cost of a Spark batch per query. A plan
        # that needs migration cannot be restored as it is; the state is checked again with the migrated plan.
        return
    if not any(layout["operators"] for layout in stored.values()) and not _declares_state(plan_json):
        return
    _compare_with_probe(plan_json, stored, info, report, session or PlanSession(), spark)


def _check_lineage(old_plan: dict[str, Any], plan_json: dict[str, Any], info: Any, report: CheckReport) -> bool:
    before = len(report.reasons)
    old, new = stateful_lineage(old_plan), stateful_lineage(plan_json)
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
                        report: CheckReport, session: PlanSession, spark: Any) -> None:
    from planengine.plan.compiled_plan import CompiledPlan
    from planengine.runtime.state_check.probe import expected_layouts, stored_session_conf

    if spark is None:
        from planengine.runtime.session import get_spark

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
    for uid, layout in stored.items():
        expected = probe.layouts.get(uid)
        if expected is None:
            if layout["operators"]:
                report.add(INCOMPATIBLE, f"query {uid} holds state in the snapshot but this plan does not run it",
                           hint=ADVICE)
            continue
        for finding in compare_layouts(uid, layout, expected):
            report.add(finding.status, finding.message, hint=finding.hint)


def _describe(ops: list[tuple[int, str, tuple[str, ...]]]) -> str:
    return "[" + ", ".join(f"{i}:{t}({', '.join(s)})" for i, t, s in ops) + "]" if ops else "[]"


def state_operators(spark: Any, checkpoint: str) -> list[dict[str, Any]]:
    """Spark's ``state-metadata`` rows for one query checkpoint (operator id, name, store, partitions)."""
    if not (Path(checkpoint) / "state").is_dir():
        return []
    rows = spark.read.format("state-metadata").load(checkpoint).collect()
    return [r.asDict(recursive=True) for r in rows]
