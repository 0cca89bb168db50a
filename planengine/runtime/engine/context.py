"""``TranslationContext``: what every translator may use while turning exec nodes into DataFrames.

Owned by the executor; translators stay pure functions ``(node, inputs, ctx) -> Stream``. Everything about
where state lives is derived from the plan (node ids, uids, state names), never from Python object
identity, so a restored plan addresses the same state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planengine.connectors.options import parse_duration_ms
from planengine.runtime.dataflow.stream import Stream


@dataclass(frozen=True)
class DrainControl:
    """A control stream ``--drain`` writes the end-of-input marker into (translators/watermark.py, sort_limit.py).

    ``directory`` is unioned into the data below a watermark or full sort; ``schema`` is the Spark schema of
    that stream; ``time_column`` receives the end of time in the marker row.
    """

    directory: str
    schema: Any  # pyspark.sql.types.StructType
    time_column: str


@dataclass
class TranslationContext:
    spark: Any  # pyspark.sql.SparkSession
    config: dict[str, str]  # the plan's envelope config merged with each node's frozen configuration
    node_ids: dict[int, int]  # id(exec node) -> plan node id
    run_dir: Any = None  # pathlib.Path of the run (checkpoints/<uid>/, channels/<name>/), None in pure tests
    # Where the run's checkpoints are when not under ``run_dir`` on this disk: the s3a:// URI of an object-store
    # run (``run_dir`` is then the driver's scratch directory of the run); None otherwise.
    checkpoints: str | None = None
    # Set by the executor: cut the DAG here, i.e. write ``stream`` through an internal changelog channel in
    # the job storage (a separate query, written exactly once) and return a stream reading it back.
    cut: Callable[[Stream, str], Stream] | None = None
    # The job root: run-independent inputs (materialised bounded sources under ``inputs/<uid>/``) live there so
    # a later run of the same job reads the same rows; None in pure tests (then the run directory is used).
    job_root: Path | None = None
    # Filled by translators while translating; the executor writes their end-of-input markers on ``--drain``.
    drain_controls: list[DrainControl] = field(default_factory=list)
    # Filled by the JVM translators (runtime/jvm/movable.py): operators a plan migration may have moved from the
    # Python operator; the executor converts their state before the queries start (runtime/state/move.py).
    state_move_candidates: list[Any] = field(default_factory=list)
    # Filled by the Kafka source in a Real-time Mode plan: (table, a call that asks the cluster for its partition
    # count, None when unknown). Only a real-time start asks, to check the cluster's task slots
    # (runtime/engine/real_time_slots.py); an until-idle run of the same plan (micro-batches) never does.
    real_time_sources: list[tuple[str, Callable[[], int | None]]] = field(default_factory=list)

    @property
    def inputs_root(self) -> Path:
        """Where materialised bounded inputs live: the job root, else the run directory."""
        return Path(self.job_root if self.job_root is not None else self.run_dir)

    def node_id(self, node: Any) -> int:
        return self.node_ids[id(node)]

    def uid(self, node: Any, operator: str) -> str:
        """``<node id>_<node name>-<version>_<operator kind>`` (DESIGN §3); a restored node's recorded uid wins,
        so migrating a node to a newer version keeps the uid under which its state was written."""
        for recorded in getattr(node, "uids", ()):
            if recorded.endswith(f"_{operator}"):
                return recorded
        meta = node.metadata
        return f"{self.node_id(node)}_{meta.name}-{meta.version}_{operator}"

    def option(self, node: Any, key: str, default: str | None = None) -> str | None:
        for k, v in node.configuration:
            if k == key:
                return v
        return self.config.get(key, default)

    def state_ttl_ms(self, node: Any) -> int:
        """TTL of the node's state in ms (0 = never expires): STATE_TTL hint or table.exec.state.ttl."""
        if node.state:
            return max(s.ttl_ms for s in node.state)

        return parse_duration_ms(self.option(node, "table.exec.state.ttl", "0 ms") or "0 ms")
