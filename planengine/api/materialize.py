"""A changelog applied to a table: what a SELECT preview of an updating query shows by default.

Flink's SQL client shows a query's result in ``table`` mode unless told otherwise: one row per key, updated in place
as changes arrive, rather than the changes themselves. A ``GROUP BY`` preview used to show its raw changelog cut at
the row limit, so the first twenty rows could all be updates of one key; this is the table instead.

Two ways to apply a change, as the query allows:

* **upsert by key**, when the plan proves a unique key of the result (``planner.upsert_keys``: the grouping keys
  of an aggregate, a deduplication's or Top-1's key, kept through projections). ``+I``/``+U`` insert or replace the
  row with that key where it stands, ``-D`` removes it, and ``-U`` says nothing an upsert needs.
* **retract by full row** otherwise: ``+I`` appends, ``-U``/``-D`` remove an equal row (the last one), and the
  ``+U`` that follows a ``-U`` takes the removed row's place, so an update stays in place here too.

>>> table = MaterializedTable(key=(0,))
>>> table.apply_all([("+I", "/home", 1), ("+I", "/cart", 1), ("-U", "/home", 1), ("+U", "/home", 2)])
>>> table.rows(), table.changes
([('/home', 2), ('/cart', 1)], 4)
>>> table = MaterializedTable(key=None)
>>> table.apply_all([("+I", 1), ("+I", 1), ("+I", 5), ("-U", 1), ("+U", 2), ("-D", 5)])
>>> table.rows()
[(1,), (2,)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "+I", "-U", "+U", "-D"


def _frozen(value: Any) -> Any:
    """A JSON value as something hashable and comparable by content (arrays and maps come as lists and dicts)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


class MaterializedTable:
    """The table a changelog describes, in the order rows first appeared. ``key``: positions of the result's unique
    key (upsert), or None (retract by full row)."""

    def __init__(self, key: Sequence[int] | None):
        self.key = tuple(key) if key is not None else None
        self.changes = 0
        self._by_key: dict[Any, tuple[Any, ...]] = {}  # upsert: dicts keep insertion order, and a key's place
        self._rows: list[tuple[Any, ...]] = []  # retract
        self._hole: int | None = None  # retract: where the row a -U removed stood, for the +U that follows

    def __len__(self) -> int:
        return len(self._by_key) if self.key is not None else len(self._rows)

    def rows(self) -> list[tuple[Any, ...]]:
        return list(self._by_key.values()) if self.key is not None else list(self._rows)

    def apply_all(self, changes: Iterable[Sequence[Any]]) -> None:
        """Apply changes, each ``(row kind, *values)`` as the preview's collect table writes them."""
        for change in changes:
            self.apply(change[0], tuple(change[1:]))

    def apply(self, kind: str, row: tuple[Any, ...]) -> None:
        self.changes += 1
        if self.key is not None:
            key = tuple(_frozen(row[i]) for i in self.key)
            if kind in (INSERT, UPDATE_AFTER):
                self._by_key[key] = row
            elif kind == DELETE:
                self._by_key.pop(key, None)
            return
        if kind in (UPDATE_BEFORE, DELETE):
            place = self._last(row)
            if place is not None:
                del self._rows[place]
            self._hole = place if kind == UPDATE_BEFORE else None
        elif kind == UPDATE_AFTER and self._hole is not None:
            self._rows.insert(self._hole, row)
            self._hole = None
        else:
            self._rows.append(row)
            self._hole = None

    def _last(self, row: tuple[Any, ...]) -> int | None:
        wanted = _frozen(list(row))
        for i in range(len(self._rows) - 1, -1, -1):
            if _frozen(list(self._rows[i])) == wanted:
                return i
        return None
