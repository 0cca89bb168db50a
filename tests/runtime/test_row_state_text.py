"""The row state text of the Python changelog operators (``state_codec.encode`` / ``encode_keyed``): rows whose MAPs
have non-string keys come back from state with their keys' types, and equal rows have equal text (retractions
find the stored row by its text). Plain ``json.dumps`` turned ``{1: "a"}`` into ``{"1": "a"}``: the row then
failed Spark's Arrow conversion when it left state."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from planengine.ir.types import parse_type
from planengine.runtime.operators.state_codec import decode, decode_row, encode, encode_keyed, rows_frame, state_encoder

KEYED_ROWS = [
    (1, {1: "a", 10: "b", 9: "c"}),
    ("k", {decimal.Decimal("1.50"): 2, decimal.Decimal("-3"): None}),
    ({dt.date(2020, 1, 2): [1, 2]}, None),
    ({True: 1.5, False: None},),
    ({1.5: {2: "nested"}},),
    ({b"\x00\xff": "bytes"},),
    ([{7: "in an array"}],),
]


@pytest.mark.parametrize("row", KEYED_ROWS, ids=[str(i) for i in range(len(KEYED_ROWS))])
def test_maps_with_non_string_keys_come_back_with_their_keys(row):
    back = decode_row(encode_keyed(row))
    assert _lists_as_tuples(back) == _lists_as_tuples(row)
    keys = [type(k) for v in row if isinstance(v, dict) for k in v]
    assert keys == [type(k) for v in back if isinstance(v, dict) for k in v]


def test_equal_maps_have_equal_text_in_any_insertion_order():
    assert encode_keyed((1, {10: "b", 9: "a"})) == encode_keyed((1, {9: "a", 10: "b"}))
    assert encode_keyed(decode_row(encode_keyed((1, {10: "b", 9: "a"})))) == encode_keyed((1, {9: "a", 10: "b"}))


def test_values_without_such_maps_keep_the_text_every_earlier_state_holds():
    for value in [(1, "a", None, {"s": 1}), [1, [2, 3]], {"n": 1, "a": [decimal.Decimal("1.5")]}]:
        assert encode_keyed(value) == encode(value)
    # a string-keyed map whose one key looks like a tag is kept apart from the tag
    assert decode(encode_keyed({"$d": "1"})) == {"$d": "1"}


def test_operators_pay_for_the_walk_only_when_their_types_hold_such_a_map():
    assert state_encoder([parse_type("INT"), parse_type("MAP<STRING, INT>")]) is encode
    assert state_encoder([parse_type("INT"), parse_type("ARRAY<MAP<BIGINT, INT>>")]) is encode_keyed
    assert state_encoder([parse_type("MULTISET<INT>")]) is encode_keyed


def test_rows_kept_by_an_earlier_version_leave_state_with_their_keys_typed():
    """State written before ``encode_keyed`` holds ``{"1": "a"}`` for ``{1: "a"}``: the frame handed to Spark reads
    the keys back as the MAP's key type, so such a job continues instead of failing at each restart."""
    old = decode_row(encode((5, {1: "a", 2: "b"})))
    assert old == (5, {"1": "a", "2": "b"})
    types = [parse_type("INT"), parse_type("MAP<INT, STRING>"), parse_type("MAP<DECIMAL(3, 1), BOOLEAN>"),
             parse_type("MULTISET<BIGINT>")]
    frame = rows_frame([(*old, {"1.5": True}, {"7": 2})], ["a", "m", "d", "s"], types)
    assert frame["m"][0] == {1: "a", 2: "b"}
    assert frame["d"][0] == {decimal.Decimal("1.5"): True}
    assert frame["s"][0] == {7: 2}


def _lists_as_tuples(v):
    if isinstance(v, list | tuple):
        return tuple(_lists_as_tuples(x) for x in v)
    if isinstance(v, dict):
        return {k: _lists_as_tuples(x) for k, x in v.items()}
    return v
