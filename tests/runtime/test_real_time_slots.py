"""A Real-time Mode plan whose tasks cannot all run at once is refused before it starts, with the numbers and the
settings that change them (``runtime/engine/real_time_slots.py``); micro-batch plans are never asked."""

from __future__ import annotations

import pytest

from planengine.runtime.engine.real_time_slots import RealTimeSlotsShort, SourceTasks, check_slots, task_slots

AGGREGATE = {"config": {"realTimeEnabled": "true", "pipeline.real-time": "AUTO", "pipeline.max-parallelism": "2"},
             "nodes": [{"type": "stream-exec-table-source-scan_1"}, {"type": "stream-exec-exchange_1"},
                       {"type": "stream-exec-group-aggregate_4"}, {"type": "stream-exec-sink_2"}]}
FILTER = {"config": {"realTimeEnabled": "true"},
          "nodes": [{"type": "stream-exec-table-source-scan_1"}, {"type": "stream-exec-calc_1"},
                    {"type": "stream-exec-sink_2"}]}
LOCAL_2 = {"spark.master": "local[2]"}


def test_an_aggregate_needs_a_slot_per_topic_partition_and_per_state_partition() -> None:
    with pytest.raises(RealTimeSlotsShort) as refused:
        check_slots(AGGREGATE, [SourceTasks("clicks", 2)], LOCAL_2)
    message = str(refused.value)
    assert "it needs 4 task slots (2 for the topic partitions table clicks reads, 2 for its state partitions " \
           "('pipeline.max-parallelism')), but the cluster has 2 (spark.master 'local[2]')" in message
    assert "'pipeline.max-parallelism'" in refused.value.hint and "'OFF'" in refused.value.hint
    assert refused.value.exit_code == 2
    check_slots(AGGREGATE, [SourceTasks("clicks", 2)], {"spark.master": "local[4]"})  # enough: returns
    check_slots(AGGREGATE, [SourceTasks("clicks", 1)], {"spark.master": "local[3]"})


def test_a_stateless_query_needs_a_slot_per_partition_only() -> None:
    check_slots(FILTER, [SourceTasks("clicks", 2)], LOCAL_2)
    with pytest.raises(RealTimeSlotsShort, match=r"needs 3 task slots \(3 for the topic partitions"):
        check_slots(FILTER, [SourceTasks("clicks", 3)], LOCAL_2)


def test_executors_count_instances_times_cores_and_unknown_slots_refuse_nothing() -> None:
    k8s = {"spark.master": "k8s://https://api:6443", "spark.executor.instances": "2", "spark.executor.cores": "2"}
    with pytest.raises(RealTimeSlotsShort, match=r"has 4 \(2 executors \(spark.executor.instances\) x 2 cores"):
        check_slots(AGGREGATE, [SourceTasks("clicks", 3)], k8s)
    assert task_slots({**k8s, "spark.task.cpus": "2"}) == (
        2, "2 executors (spark.executor.instances) x 1 cores (spark.executor.cores)")
    assert task_slots({"spark.master": "local[*]"}, cpu_count=16)[0] == 16
    # Dynamic allocation without a maximum: how many slots there will be is not known, so Spark decides.
    check_slots(AGGREGATE, [SourceTasks("clicks", 64)], {**k8s, "spark.dynamicAllocation.enabled": "true"})


def test_plans_not_in_the_mode_are_not_checked() -> None:
    micro = {**AGGREGATE, "config": {**AGGREGATE["config"], "realTimeEnabled": "false"}}
    check_slots(micro, [SourceTasks("clicks", 64)], LOCAL_2)
    check_slots({"config": {}, "nodes": []}, [SourceTasks("clicks", 64)], LOCAL_2)
