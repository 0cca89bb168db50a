"""Before a Real-time Mode query starts: does the cluster have a task slot for every task of every stage at once?

Why a check of our own: in the mode Spark schedules all stages of a query together (records stream through a
pipelined shuffle), so a query needs one slot per Kafka partition it reads *plus* one per state partition
(``pipeline.max-parallelism``) when it shuffles. With fewer, Spark starts the query and then fails it with
``CONCURRENT_SCHEDULER_INSUFFICIENT_SLOT``, after the job root has a new run and the operator has a pod that can
only crash-loop. Here the start is refused first, with the numbers and the settings that change them.

The Kafka source reports its partitions while it is translated (``TranslationContext.real_time_tasks``); the
slots come from the session's master (``local[N]``) or its executors' configuration. Where either cannot be
known (a ``topic-pattern``, dynamic allocation without a maximum) nothing is refused: Spark's own error remains.

The count is a lower bound, so a refusal is always right: one stage for the sources and one for the state
partitions when the plan shuffles. A stateful operator the runtime adds behind another one keyed differently (an
upsert materializer on a sink key of another type) is one more stage the plan does not show; Spark's own error
then names the number.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from planengine.errors import UserError
from planengine.plan import real_time

_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")
# Plan nodes whose query reads a shuffle (a second pipelined stage of state partitions).
_SHUFFLING = ("stream-exec-exchange", "stream-exec-group-aggregate")


class RealTimeSlotsShort(UserError):
    """The cluster has fewer task slots than the real-time query needs at once."""


@dataclass(frozen=True)
class SourceTasks:
    """One Kafka source of a real-time query: its table and how many partitions (tasks) it reads."""

    table: str
    partitions: int


def task_slots(conf: dict[str, str], cpu_count: int | None = None) -> tuple[int, str] | None:
    """How many tasks the session runs at once, with where that number comes from; None when unknown.

    >>> task_slots({"spark.master": "local[2]"})
    (2, "spark.master 'local[2]'")
    >>> task_slots({"spark.master": "k8s://https://api", "spark.executor.instances": "3", "spark.executor.cores": "2"})
    (6, '3 executors (spark.executor.instances) x 2 cores (spark.executor.cores)')
    >>> task_slots({"spark.master": "k8s://https://api", "spark.dynamicAllocation.enabled": "true"}) is None
    True
    """
    master = conf.get("spark.master", "local[*]")
    local = _LOCAL.match(master)
    if local:
        n = local.group(1)
        slots = 1 if n is None else (cpu_count or os.cpu_count() or 1) if n == "*" else int(n)
        return slots, f"spark.master '{master}'"
    cores = int(conf.get("spark.executor.cores", "1")) // max(1, int(conf.get("spark.task.cpus", "1")))
    if conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        most = conf.get("spark.dynamicAllocation.maxExecutors")
        if most is None:
            return None
        return int(most) * cores, (f"at most {most} executors (spark.dynamicAllocation.maxExecutors) x {cores} "
                                   "cores (spark.executor.cores)")
    instances = int(conf.get("spark.executor.instances", "2"))
    return instances * cores, (f"{instances} executors (spark.executor.instances) x {cores} cores "
                               "(spark.executor.cores)")


def shuffle_tasks(plan_data: dict[str, Any]) -> int:
    """The state partitions a real-time plan's query runs as a second stage (0 when it does not shuffle)."""
    from planengine.runtime.engine.session import plan_shuffle_partitions  # noqa: PLC0415 — pyspark-free import

    config = plan_data.get("config") or {}
    shuffles = any(str(n.get("type", "")).startswith(_SHUFFLING) for n in plan_data.get("nodes") or [])
    return plan_shuffle_partitions(config) if shuffles else 0


def check_slots(plan_data: dict[str, Any], sources: list[SourceTasks], conf: dict[str, str]) -> None:
    """Refuse the start of a real-time plan whose tasks cannot all run at once (module doc); else return."""
    if str((plan_data.get("config") or {}).get(real_time.ENABLED_KEY)) != "true" or not sources:
        return
    slots = task_slots(conf)
    if slots is None:
        return
    have, where = slots
    state = shuffle_tasks(plan_data)
    need = sum(s.partitions for s in sources) + state
    if need <= have:
        return
    parts = [f"{s.partitions} for the topic partitions table {s.table} reads" for s in sources]
    if state:
        parts.append(f"{state} for its state partitions ('pipeline.max-parallelism')")
    raise RealTimeSlotsShort(
        f"this plan runs in Real-time Mode ('{real_time.MODE_KEY}'), where every stage of its query runs at once: "
        f"it needs {need} task slots ({', '.join(parts)}), but the cluster has {have} ({where})",
        hint="give the job more executors or cores, or compile the plan with a lower 'pipeline.max-parallelism', "
             f"or with '{real_time.MODE_KEY}' = 'OFF' to run it in micro-batches")
