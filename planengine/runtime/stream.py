"""``Stream``: what a translated exec node hands to its consumers.

A stream is a streaming DataFrame whose columns are the node's output fields under positional internal
names ``f0, f1, …`` (Flink field names may repeat after joins and may not be valid Spark identifiers), plus
the hidden ``_rowkind`` column (``+I``/``-U``/``+U``/``-D``) **only** on updating edges (DESIGN §6). The
logical field names travel beside it for sinks and explanations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

ROWKIND = "_rowkind"


def column_name(i: int) -> str:
    return f"f{i}"


def column_names(n: int) -> list[str]:
    return [column_name(i) for i in range(n)]


@dataclass(frozen=True)
class Stream:
    df: Any  # pyspark.sql.DataFrame (streaming)
    fields: tuple[str, ...]  # logical field names, in order; columns are f0..f{n-1}
    updating: bool = False  # True when df carries _rowkind
    # Column (f<i>) carrying event time with a Spark watermark defined on it, when there is one.
    rowtime: str | None = None
    # Free-form facts translators pass along (e.g. the source uid for "read once" sharing).
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return column_names(len(self.fields))

    def with_df(self, df: Any, **changes: Any) -> Stream:
        return replace(self, df=df, **changes)
