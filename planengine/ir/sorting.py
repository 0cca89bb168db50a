"""Sort keys: a field, its direction and where NULLs go (ORDER BY of Top-N, sort-limit and OVER).

>>> key = SortKey(1, ascending=False)
>>> key.to_json()
{'index': 1, 'isAscending': False, 'nullIsLast': True}
>>> SortKey.from_json(key.to_json()) == SortKey(1, False, False)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SortKey:
    field: int
    ascending: bool = True
    nulls_first: bool | None = None

    def __str__(self) -> str:
        return f"${self.field} {'ASC' if self.ascending else 'DESC'}"

    def to_json(self) -> dict[str, Any]:
        nulls_first = self.ascending if self.nulls_first is None else self.nulls_first
        return {"index": self.field, "isAscending": self.ascending, "nullIsLast": not nulls_first}

    @staticmethod
    def from_json(data: dict[str, Any]) -> SortKey:
        return SortKey(data["index"], data["isAscending"], not data["nullIsLast"])
