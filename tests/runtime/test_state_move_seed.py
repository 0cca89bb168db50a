"""A state move's seed must emit nothing (``runtime/state/move.py``).

The seed starts the JVM processor from the converted state over an empty input and without a watermark (Spark's
initial one, the epoch), so the event-time timers that state registers do not fire in it, and the move relies on
that: a row a seed emitted would belong to the job's output, yet it goes nowhere. Here the real session processor
starts from state in a seed, as a move starts it, with a session already due where the seed stands (it ended
before the epoch): it fires at once, and the seed fails naming the operator and the rows. (Seeds from real moved
state, which emit nothing, run in every move of ``test_state_move.py``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planengine.errors import InternalError
from planengine.ir import types as T
from planengine.ir.aggregates import AggregateCall
from planengine.runtime.jvm import operators
from planengine.runtime.jvm.group_aggregate_processor import call_spec
from planengine.runtime.jvm.movable import MovableOperator
from planengine.runtime.jvm.specs import SessionAggregateSpec
from planengine.runtime.state.conversion import started_from
from planengine.runtime.state.move import _empty_input, _run_seed

# Sessions per f0 with COUNT(*), over (f0 STRING, f1 INT, _t_ms BIGINT): the session spec of
# runtime/jvm/session_window_processor.py.
SPEC = SessionAggregateSpec(
    width=2, time_field=2, record_watermark_field=None, partition_keys=(0,), grouping=(0,), gap_ms=5000,
    agg_calls=(call_spec(AggregateCall("COUNT", None, (), T.BIGINT.with_nullable(False), "n")),), state_ttl_ms=0,
    state_names=("windowAccumulators",))
OPERATOR = "node 5 (stream-exec-window-aggregate_4, JVM processor sessionAggregate) in query 9_q, Spark operator 0"


def _session_seed(spark: Any, work: Path, session_end: int) -> Callable[[], Any]:
    """The seed query of a moved session processor whose state holds one open session of key ``k`` (rows 7 and 8)
    ending at ``session_end``, as ``state_move._seed`` builds it."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    schema = StructType([StructField("f0", StringType()), StructField("f1", IntegerType()),
                         StructField("_t_ms", LongType())])
    seed_input = _empty_input(spark, schema, work / "input")
    spec = SPEC.to_text()
    state_type = StructType.fromJson(json.loads(str(operators(spark).initialStateType("sessionAggregate",
                                                                                      seed_input._jdf, spec))))
    session = (session_end - 5000, session_end, [("k", 7), ("k", 8)])
    initial = spark.createDataFrame([("k", (([session], 0),))], StructType(
        [StructField("f0", StringType(), True), StructField("state", state_type, False)]))
    candidate = MovableOperator(None, "sessionAggregate", SPEC, seed_input, ("f0",))
    return lambda: started_from(candidate, seed_input, initial, None)


def test_a_seed_that_emits_fails_naming_the_operator_and_its_rows(spark, tmp_path: Path) -> None:
    with pytest.raises(InternalError) as failed:
        _run_seed(spark, _session_seed(spark, tmp_path, -1000), tmp_path / "seed", 2, OPERATOR)
    message = failed.value.message
    assert message.startswith(f"state move of {OPERATOR}: the seed query emitted 1 row(s): ('k', 2, -6000, -1000)")
    assert "Nothing was committed" in message and "snapshot it was forked from is untouched" in message
    assert "old plan from the same snapshot" in (failed.value.hint or "")
