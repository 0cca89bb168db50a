"""Results as text tables, the way Flink's SQL client prints them in ``tableau`` mode.

>>> print(render_table(("table name",), [("orders",), ("payments",)]))
+------------+
| table name |
+------------+
|     orders |
|   payments |
+------------+
2 rows in set
>>> print(render_table(("op", "page", "cnt"), [("+I", "/home", 1), ("+U", None, 2)], footer=None))
+----+--------+-----+
| op |   page | cnt |
+----+--------+-----+
| +I |  /home |   1 |
| +U | <NULL> |   2 |
+----+--------+-----+

Values are right-aligned and cut to ``max_width`` characters (``table.display.max-column-width``, 30 like
Flink) with a trailing ``...``; NULL prints as ``<NULL>``.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import Any

NULL = "<NULL>"
DEFAULT_MAX_WIDTH = 30


def cell_text(value: Any) -> str:
    """A value as Flink prints it: ``<NULL>``, ``TRUE``/``FALSE``, timestamps with a space, rows in brackets."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.datetime):
        text = value.isoformat(sep=" ")
        return text[:-3] if value.microsecond and text.endswith("000") else text
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(cell_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{cell_text(k)}={cell_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bytes):
        return "x'" + value.hex() + "'"
    return str(value)


def _cut(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_width: int = DEFAULT_MAX_WIDTH,
                 footer: str | None = "") -> str:
    """The table; ``footer`` ``""`` adds Flink's "N rows in set" line (or "Empty set"), None adds nothing."""
    if not rows and footer == "":
        return "Empty set"
    header = [_cut(c, max_width) for c in columns]
    body = [[_cut(cell_text(v), max_width) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(header)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths)) + " |"

    out = [border, line(header), border, *(line(r) for r in body), border]
    if footer == "":
        out.append(f"{len(rows)} row{'' if len(rows) == 1 else 's'} in set")
    elif footer:
        out.append(footer)
    return "\n".join(out)
