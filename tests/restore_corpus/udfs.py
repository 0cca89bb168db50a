"""Python functions the restore corpus programs register (their module path is part of the cases' DDL)."""

from __future__ import annotations

import decimal
from typing import Any


class SpendSummary:
    """``n pages total`` of a user's orders. Its accumulator holds a Decimal, a set and a tuple, so a restore of
    ``group_aggregate_v4`` proves the versioned state codec gives them back with their Python types."""

    result_type = "STRING"

    def create_accumulator(self) -> dict[str, Any]:
        return {"n": 0, "total": decimal.Decimal(0), "pages": set(), "last": None}

    def accumulate(self, acc: dict[str, Any], page: str, price: decimal.Decimal) -> None:
        acc["n"] += 1
        acc["total"] += price
        acc["pages"].add(page)
        acc["last"] = (page, price)

    def get_value(self, acc: dict[str, Any]) -> str:
        assert isinstance(acc["pages"], set) and isinstance(acc["total"], decimal.Decimal)
        assert acc["last"] is None or isinstance(acc["last"], tuple)
        return f"{acc['n']} {'|'.join(sorted(acc['pages']))} {acc['total']}"
