"""Python functions the restore corpus programs register (their module path is part of the cases' DDL)."""

from __future__ import annotations

import datetime
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


class SessionSpend:
    """``n total first-last`` of a session's orders. The session operator keeps the session's rows in state (this
    accumulator lives only while the session fires), so a restore of ``time_windows_v4`` proves the rows come back
    from the versioned state codec as the Python values Spark gave: a Decimal price and a datetime."""

    result_type = "STRING"

    def create_accumulator(self) -> list[Any]:
        return [0, decimal.Decimal(0), None, None]

    def accumulate(self, acc: list[Any], price: decimal.Decimal, ts: datetime.datetime) -> None:
        assert isinstance(price, decimal.Decimal) and isinstance(ts, datetime.datetime), (type(price), type(ts))
        acc[0] += 1
        acc[1] += price
        acc[2] = ts if acc[2] is None else min(acc[2], ts)
        acc[3] = ts if acc[3] is None else max(acc[3], ts)

    def get_value(self, acc: list[Any]) -> str:
        return f"{acc[0]} {acc[1]} {acc[2]:%H:%M:%S}-{acc[3]:%H:%M:%S}"
