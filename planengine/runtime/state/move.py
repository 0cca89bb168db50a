"""Carry a moved node's state from the Python operator to the JVM processor inside a run's checkpoint.

``planengine migrate`` / ``COMPILE PLAN 'new' FROM 'old'`` move group aggregates, deduplicates, changelog
normalizes, upsert materializers, Top-Ns and equi joins from the Python ``transformWithState`` operator to the JVM
processor (``planengine.plan.state_moves``). When the migrated plan
starts from a snapshot of the old one, the forked checkpoint of the node's query still holds the Python
operator's state. This step replaces it, before the query starts, by the same state in the JVM processor's
layout, **at the same state version**, so everything else in the checkpoint stays as it was: source offsets,
the sinks' batch ids, the watermark, the other operators' state. (Spark applies ``transformWithState``'s
initial state only in a query's batch 0, i.e. in a new checkpoint, where a file source would re-read every
file and a file sink would skip the batches it already holds: see docs/jvm-operators.md.)

How, for a query whose last committed batch is ``N`` (its operators' state version ``N + 1``):

1. read the Python operator's state with Spark's state data source and convert it (``conversion.initial_state_of``);
2. run a *seed* query once in a scratch checkpoint: the JVM processor started from that initial state over
   an empty input (a one-line text file filtered out, so batch 0 runs), with the query's partition count. The
   seed defines no watermark (Spark's initial one, the epoch, stands), so the event-time timers the moved state
   registers (a pending row's, an open session's) do not fire in it: a Python run kept nothing due at or before
   the epoch, having judged lateness against a watermark of at least that. It must emit nothing. Rows it emits
   would belong to the job's output but go nowhere, so the move fails loudly instead, naming the operator and
   the rows. Every move's seed runs before
   any checkpoint is changed, so a failed one leaves the run as it was forked from the snapshot;
3. replace the operator's directory in the run's checkpoint (never in place: files may be hard links into
   the snapshot) by the seed's: each partition's RocksDB snapshot ``1.zip`` becomes ``<N + 1>.zip`` (the
   file holds no version), the operator metadata is renumbered to the operator's id and batch ``N`` and
   points at the copied state schema.

The step is level-based: a checkpoint whose operator already is the JVM processor is left alone, so a
restarted run does not repeat it. Each move is logged at INFO and recorded in ``<run>/state-moves.json``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from planengine.errors import InternalError, PlanIncompatible
from planengine.plan.state_moves import JVM_OPERATOR, PYTHON_OPERATORS, user_state
from planengine.runtime.state.lineage import stateful_lineage
from planengine.runtime.storage.snapshots import last_committed_batch_id

log = logging.getLogger("planengine.runtime.state_move")

RECORD = "state-moves.json"
SHOWN_ROWS = 5  # rows a failed seed's error shows


@dataclass(frozen=True)
class MovedState:
    node: int
    query: str
    operator: int
    batch: int
    groups: int
    partitions: int


@dataclass(frozen=True)
class OperatorMetadata:
    operator_id: int
    name: str
    partitions: int
    variables: tuple[str, ...]


def operator_metadata(checkpoint: Path) -> list[OperatorMetadata]:
    """The stateful operators of a query checkpoint as their newest ``_metadata/v2/<batch>`` files say."""
    out = []
    for op_dir in sorted((checkpoint / "state").glob("*"), key=lambda p: p.name):
        files = [p for p in (op_dir / "_metadata" / "v2").glob("*") if p.name.isdigit()]
        if not op_dir.name.isdigit() or not files:
            continue
        newest = max(files, key=lambda p: int(p.name))
        try:
            data = json.loads(newest.read_text(encoding="utf-8").partition("\n")[2])
            props = json.loads(data.get("operatorPropertiesJson") or "{}")
            stores = data.get("stateStoreInfo") or [{}]
            out.append(OperatorMetadata(int(op_dir.name), str(data["operatorInfo"]["operatorName"]),
                                        int(stores[0].get("numPartitions", 0)),
                                        tuple(str(v["stateName"]) for v in props.get("stateVariables", []))))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            # Not a layout this step knows (another Spark version's metadata): not a Python operator to move;
            # Spark's own restore checks judge the file.
            log.warning("state move: cannot read %s (%s); operator %s left alone", newest, error, op_dir.name)
    return out


def python_operator_of(checkpoint: Path, node_id: int, state_names: tuple[str, ...], sharing: int = 1
                       ) -> OperatorMetadata | None:
    """The Python operator holding the node's state, None when the checkpoint has none (already moved, or
    a fresh query). Raises when several could be it, or when ``sharing`` (the query's nodes with these state
    names) is above one: the operator ids do not name their nodes."""
    found = [op for op in operator_metadata(checkpoint)
             if op.name in PYTHON_OPERATORS and user_state(op.variables)
             and user_state(op.variables) <= set(state_names)]
    if len(found) > 1 or (found and sharing > 1):
        raise PlanIncompatible(f"node {node_id}: the checkpoint {checkpoint} holds {len(found)} Python operator(s) "
                               f"with its state variables ({', '.join(state_names)}) and its query has {sharing} "
                               "node(s) with them; which one is the node's is ambiguous",
                               hint="run the old plan's version of the node (migrate it one query at a time), or "
                                    "start the migrated plan without state")
    return found[0] if found else None


def move_pending_state(spark: Any, plan_json: dict[str, Any], run_dir: Path, ctx: Any,
                       candidates: list[Any]) -> list[MovedState]:
    """Move the state of every candidate (``ctx.state_move_candidates``: the JVM operators of
    ``runtime/jvm/movable.py``) whose query's checkpoint still holds the Python operator's state; the others
    are left alone. Called before any query of the run starts.

    Every move's seed runs before any checkpoint is changed, so a seed that fails (or emits a row) leaves the
    whole run's checkpoints as they were forked from the snapshot."""

    if not candidates:
        return []
    lineage = stateful_lineage(plan_json)
    query_of = {nid: uid for uid, ops in lineage.items() for nid, _, _ in ops}
    staged: list[tuple[Path, Path, MovedState, str]] = []
    with tempfile.TemporaryDirectory(prefix="planengine-state-move-") as scratch:
        for candidate in candidates:
            node = candidate.node
            node_id = ctx.node_id(node)
            uid = query_of.get(node_id)
            checkpoint = run_dir / "checkpoints" / uid if uid else None
            if uid is None or checkpoint is None or not (checkpoint / "state").is_dir():
                continue
            declared = next(state for nid, _, state in lineage[uid] if nid == node_id)
            sharing = sum(1 for _, _, state in lineage[uid] if set(state) == set(declared))
            op = python_operator_of(checkpoint, node_id, tuple(type(node).STATE_NAMES), sharing)
            if op is None:
                continue
            work = Path(scratch) / str(len(staged))
            moved = _seed(spark, checkpoint, uid, op, candidate, ctx, work)
            staged.append((work / "seed" / "state" / "0", checkpoint / "state" / str(op.operator_id), moved, op.name))
        for seed_op, target, moved, python_name in staged:
            _replace_operator(seed_op, target, moved.operator, moved.batch)
            log.info("state move: node %d (query %s, Spark operator %d): %d groups moved from %s to %s at batch %d",
                     moved.node, moved.query, moved.operator, moved.groups, python_name, JVM_OPERATOR, moved.batch)
    moves = [moved for _, _, moved, _ in staged]
    if moves:
        record = run_dir / RECORD
        previous = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else []
        record.write_text(json.dumps(previous + [asdict(m) for m in moves], indent=2) + "\n", encoding="utf-8")
    return moves


def _seed(spark: Any, checkpoint: Path, uid: str, op: OperatorMetadata, candidate: Any, ctx: Any,
          work: Path) -> MovedState:
    """Convert the Python operator's state and run the JVM processor's seed from it in ``work/seed`` (nothing in
    the run's checkpoint changes here)."""
    from planengine.runtime.state import conversion  # noqa: PLC0415 — conversion loads pandas/pyarrow/numpy; only an actual state move needs them

    node_id = ctx.node_id(candidate.node)
    batch = last_committed_batch_id(checkpoint)
    if batch < 0:
        raise InternalError(f"node {node_id}: query {uid} holds state but no committed batch")
    seed_input = _empty_input(spark, candidate.input_df.schema, work / "input")
    initial = conversion.initial_state_of(spark, str(checkpoint), op.operator_id, candidate, seed_input, ctx)
    groups = initial.count()
    what = (f"node {node_id} ({candidate.node.type_name}, JVM processor "
            f"{getattr(candidate, 'entry', 'groupAggregate')}) in query {uid}, Spark operator {op.operator_id}")
    _run_seed(spark, lambda: conversion.started_from(candidate, seed_input, initial, ctx), work / "seed", op.partitions,
              what)
    return MovedState(node_id, uid, op.operator_id, batch, groups, op.partitions)


def _empty_input(spark: Any, schema: Any, inbox: Path) -> Any:
    """A streaming DataFrame with the columns of ``schema`` and no rows, whose first batch does run: one text
    file, filtered out. (Nullable columns: a seed stores nullable key schemas, which Spark accepts when the
    real query's are NOT NULL.)"""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    inbox.mkdir(parents=True)
    (inbox / "seed.txt").write_text("seed\n", encoding="utf-8")
    lines = spark.readStream.format("text").load(str(inbox)).where(F.lit(False))
    return lines.select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def _run_seed(spark: Any, build: Callable[[], Any], checkpoint: Path, partitions: int, what: str) -> None:
    """Run ``build()`` (the JVM operator started from the initial state, over the empty input) for one batch,
    with the query's partition count, and fail if it emits a row (``what``: the operator, for the error)."""
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    spark.conf.set(key, str(partitions))  # the seed's state partitions must be the query's
    emitted: list[Any] = []
    try:
        out = build()
        query = (out.writeStream.foreachBatch(lambda batch, _: emitted.extend(batch.collect()))
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).queryName(f"state-move-seed-{os.getpid()}").start())
        query.awaitTermination()
        if query.exception() is not None:
            raise InternalError(f"the state move's seed query failed: {query.exception()}")
    finally:
        spark.conf.set(key, before)
    if emitted:
        shown = ", ".join(str(tuple(row)) for row in emitted[:SHOWN_ROWS])
        more = f" and {len(emitted) - SHOWN_ROWS} more" if len(emitted) > SHOWN_ROWS else ""
        raise InternalError(
            f"state move of {what}: the seed query emitted {len(emitted)} row(s): {shown}{more}. A seed runs the "
            "moved state over no input and without a watermark (the epoch), so it must emit nothing; these rows "
            "would belong to the job's output. Nothing was committed: the rows went nowhere, no checkpoint of the "
            "run was changed (they still hold the Python operators' state) and the snapshot it was forked from is "
            "untouched",
            hint="keep running the old plan from the same snapshot (it restores unchanged) and report this with "
                 "the plan and the snapshot: the converted state has something due without a watermark")
    if last_committed_batch_id(checkpoint) != 0:
        raise InternalError(f"the state move's seed query committed no batch in {checkpoint}")


def _replace_operator(seed_op: Path, target: Path, operator_id: int, batch: int) -> None:
    """Put the seed's operator directory at ``target``, renumbered to ``operator_id`` and state version
    ``batch + 1``. The old directory is removed first (unlinking never touches a snapshot's hard links)."""
    zips = sorted(seed_op.glob("*/1.zip"))
    if not zips:
        raise InternalError(f"the state move's seed wrote no RocksDB snapshot under {seed_op} (changelog "
                            "checkpointing on?)")
    staged = target.with_name(f".{target.name}.moving")
    shutil.rmtree(staged, ignore_errors=True)
    shutil.copytree(seed_op, staged, ignore=shutil.ignore_patterns("*.crc"))
    for zipped in staged.glob("*/1.zip"):
        zipped.rename(zipped.with_name(f"{batch + 1}.zip"))
    schema_files = [p for p in (staged / "_stateSchema").rglob("*") if p.is_file()]
    meta_dir = staged / "_metadata" / "v2"
    metas = [p for p in meta_dir.glob("*") if p.name.isdigit()]
    if len(metas) != 1 or len(schema_files) != 1:
        raise InternalError(f"the state move's seed wrote {len(metas)} operator metadata and {len(schema_files)} "
                            "state schema files; expected one of each")
    header, _, body = metas[0].read_text(encoding="utf-8").partition("\n")
    data = json.loads(body)
    data["operatorInfo"]["operatorId"] = operator_id
    final_schema = target / schema_files[0].relative_to(staged)
    for store in data.get("stateStoreInfo", []):
        store["stateSchemaFilePaths"] = ["file:" + str(final_schema.absolute())]
    metas[0].unlink()
    (meta_dir / str(batch)).write_text(header + "\n" + json.dumps(data, separators=(",", ":")), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staged.rename(target)
