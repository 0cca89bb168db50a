"""Which nodes keep their Python operator because the JVM processor's typed state cannot hold their rows: Spark
derives an Avro schema from ``transformWithState``'s state schemas and fails the query at its start on a MAP whose
key is not a string. The rule reads only the plan and holds in every JVM node version (no such query ever ran)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from planengine.ir import types as T
from planengine.ir.aggregates import AggregateCall
from planengine.ir.sorting import SortKey
from planengine.plan.strategies import state_type_refusal
from planengine.runtime.jvm.over_aggregate_processor import refusal as over_refusal

ROWTIME = T.timestamp(3).with_time_attribute(T.TimeAttribute.ROWTIME)


def test_the_refusal_names_the_first_field_the_state_cannot_hold():
    types = [T.INT, T.parse_type("MAP<STRING, INT>"), T.parse_type("ROW<a ARRAY<MULTISET<INT>>>")]
    assert state_type_refusal(types, "left input") == (
        "the left input's field 2 is ROW<`a` ARRAY<MULTISET<INT>>>, which Spark's typed transformWithState state "
        "cannot hold (it has no Avro form for a MAP with non-STRING keys or an INTERVAL)")
    assert state_type_refusal(types[:2]) is None
    assert state_type_refusal([T.INTERVAL_DAY_TIME]).startswith("the input's field 0 is INTERVAL DAY")


@pytest.mark.parametrize("version", [2, 3, 4])
def test_over_rows_holding_such_a_map_stay_on_python_in_every_version(version):
    def node(field_type):
        return SimpleNamespace(inputs=(SimpleNamespace(field_types=(T.INT, field_type, ROWTIME)),),
                               order_keys=(SortKey(2),),
                               aggregates=(AggregateCall("COUNT", None, (0,), T.BIGINT.with_nullable(False), "c"),))

    assert over_refusal(node(T.parse_type("MAP<INT, STRING>")), version).startswith(
        "the input's field 1 is MAP<INT, STRING>, which Spark's typed transformWithState state cannot hold")
    assert over_refusal(node(T.parse_type("MAP<STRING, INT>")), version) is None
