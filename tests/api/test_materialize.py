"""A changelog applied to a table (what a SELECT preview of an updating query shows): data in, table out."""

from __future__ import annotations

from typing import Any

import pytest

from planengine.api.materialize import MaterializedTable

# name -> (unique key or None, changes, the table afterwards)
CASES: dict[str, tuple[tuple[int, ...] | None, list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {
    "upsert: an update stays in its row's place": (
        (0,), [("+I", "/home", 1), ("+I", "/cart", 1), ("-U", "/home", 1), ("+U", "/home", 2)],
        [("/home", 2), ("/cart", 1)]),
    "upsert: update-afters alone (an upsert changelog) replace by key": (
        (0,), [("+I", "/home", 1), ("+U", "/home", 2), ("+U", "/home", 3)], [("/home", 3)]),
    "upsert: a delete removes the key, a later insert appends it": (
        (0,), [("+I", "a", 1), ("+I", "b", 1), ("-D", "a", 1), ("+I", "a", 7)], [("b", 1), ("a", 7)]),
    "upsert: a key of several columns, one of them an array": (
        (0, 1), [("+I", "x", [1, 2], 1), ("+I", "x", [1, 3], 1), ("+U", "x", [1, 2], 5)],
        [("x", [1, 2], 5), ("x", [1, 3], 1)]),
    "upsert: a delete of a key never seen is a no-op": ((0,), [("-D", "ghost", 1), ("+I", "a", 1)], [("a", 1)]),
    "retract: an update pair stays in place": (
        None, [("+I", 10), ("+I", 20), ("-U", 10), ("+U", 11)], [(11,), (20,)]),
    "retract: duplicates are a multiset, the last equal row goes": (
        None, [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 1, "a"), ("-D", 1, "a")], [(1, "a"), (2, "b")]),
    "retract: an update-after without its before appends": (None, [("+I", 1), ("+U", 2)], [(1,), (2,)]),
    "retract: a delete between the pair's halves ends the in-place update": (
        None, [("+I", 1), ("+I", 2), ("-U", 1), ("-D", 2), ("+U", 3)], [(3,)]),
    "retract: rows compare by content, maps included": (
        None, [("+I", {"k": [1]}), ("-D", {"k": [1]})], []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_table_a_changelog_describes(case: str) -> None:
    key, changes, expected = CASES[case]
    table = MaterializedTable(key)
    table.apply_all(changes)
    assert table.rows() == expected
    assert len(table) == len(expected) and table.changes == len(changes)
