"""The versioned state codec (``state_codec.dump_state``/``load_state``): lossless, canonical, strict JSON; and a
Python aggregate function's accumulator kept with it (group-aggregate_4) or refused with a clear error."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import pickle

import pytest
from pyspark.sql import Row

from planengine.errors import ValidationError
from planengine.ir import types as T
from planengine.runtime.operators.aggregates.accumulators import UserAggregate
from planengine.runtime.operators.state_codec import dump_state, load_state

VALUES = [
    None, True, 0, -(2 ** 70), 1.5, -0.0, "text with \"quotes\" and ünïcode", b"\x00\x80\xff",
    decimal.Decimal("-12345678901234567890.123456789"), dt.date(2020, 10, 10),
    dt.datetime(2020, 10, 10, 0, 0, 1, 123000), dt.datetime(2020, 10, 10, 1, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    dt.time(23, 59, 59, 999999), dt.timedelta(days=-1, seconds=5, microseconds=7),
    [1, [2, (3, 4)]], (1, ("a", None)), {"a": 1, "b": [None]}, {1: "int key", (2, "x"): {3}},
    {"$d": "a user's key that looks like a tag"}, {"$t": [1]}, {1, 2, 3}, frozenset(("x",)),
    {"last": -(2 ** 63), "rows": [(1602288001000, ("p1", 1, decimal.Decimal("1.50"), dt.datetime(2020, 10, 10)))]},
]


@pytest.mark.parametrize("value", VALUES, ids=[f"{type(v).__name__}-{i}" for i, v in enumerate(VALUES)])
def test_values_come_back_equal_and_of_the_same_types(value):
    back = load_state(dump_state(value))
    assert back == value and _types(back) == _types(value)


def _types(v):
    if isinstance(v, dict):
        return ("dict", sorted((repr(_types(k)), repr(_types(x))) for k, x in v.items()))
    if isinstance(v, list | tuple | set | frozenset):
        return (type(v).__name__, sorted(repr(_types(x)) for x in v))
    return type(v).__name__


def test_rows_keep_their_field_names_and_non_finite_floats_survive_as_strict_json():
    row = Row(k="a", nested=Row(x=1, y=[2.5]))
    back = load_state(dump_state(row))
    assert isinstance(back, Row) and back.asDict(recursive=True) == row.asDict(recursive=True)
    text = dump_state([math.nan, math.inf, -math.inf])
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    nan, inf, minus_inf = load_state(text)
    assert math.isnan(nan) and inf == math.inf and minus_inf == -math.inf


def test_equal_values_have_equal_text_whatever_their_insertion_order():
    assert dump_state({"b": 1, "a": {3, 1, 2}}) == dump_state({"a": {2, 3, 1}, "b": 1})
    assert dump_state({(2, 1): "x", (1, 2): "y"}) == dump_state({(1, 2): "y", (2, 1): "x"})


def test_a_value_the_format_cannot_represent_is_refused_with_its_type():
    with pytest.raises(TypeError, match="Accumulator"):
        dump_state({"acc": Accumulator()})


class Accumulator:
    """A class instance: not representable (a pickle would have kept it, tied to this class's internals)."""

    def __init__(self) -> None:
        self.total = 0


class ObjectAccumulatorSum:
    result_type = "BIGINT"

    def create_accumulator(self):
        return Accumulator()

    def accumulate(self, acc, value):
        acc.total += value

    def get_value(self, acc):
        return acc.total


class DictAccumulatorSum:
    result_type = "BIGINT"

    def create_accumulator(self):
        return {"total": decimal.Decimal(0), "seen": set()}

    def accumulate(self, acc, value):
        acc["total"] += value
        acc["seen"].add(value)

    def get_value(self, acc):
        return int(acc["total"]) * 10 + len(acc["seen"])


def test_a_python_aggregate_keeps_its_accumulator_as_tagged_json_text_not_a_pickle():
    agg = UserAggregate(T.BIGINT, T.BIGINT, f"{__name__}.DictAccumulatorSum", "dict_sum", json_state=True)
    acc = agg.create()
    for v in (5, 7, 5):
        acc = agg.accumulate(acc, v, None)
    assert load_state(acc) == {"total": decimal.Decimal(17), "seen": {5, 7}}
    assert agg.value(acc) == 172
    old = UserAggregate(T.BIGINT, T.BIGINT, f"{__name__}.DictAccumulatorSum", "dict_sum")  # versions 1-3
    assert pickle.loads(base64.b64decode(old.accumulate(old.create(), 5, None)))["total"] == 5


def test_an_accumulator_that_is_not_representable_fails_at_once_naming_the_function_and_the_remedy():
    agg = UserAggregate(T.BIGINT, T.BIGINT, f"{__name__}.ObjectAccumulatorSum", "object_sum", json_state=True)
    expected = r"aggregate function object_sum .*ObjectAccumulatorSum.*Accumulator"
    with pytest.raises(ValidationError, match=expected) as e:
        agg.accumulate(agg.create(), 1, None)
    assert "JSON-representable" in (e.value.hint or "")
