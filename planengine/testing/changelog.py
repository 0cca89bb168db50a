"""Changelogs as data: rows with a row kind, their materialization, and a ``changelog-json`` sink on disk.

Materialization applies a changelog to a table: ``+I``/``+U`` add a row, ``-U``/``-D`` remove one
(a multiset: a retract sink). Keyed by column positions (an upsert sink), ``+I``/``+U`` put the row under
its key and ``-U``/``-D`` remove the key, so the last write wins.

>>> log = [ChangelogRow.parse(s) for s in ["+I[a, 1]", "-U[a, 1]", "+U[a, 2]", "+I[b, 1]", "-D[b, 1]"]]
>>> sorted(materialize(log).elements())
['a, 2']
>>> sorted(materialize([ChangelogRow.parse("+I[a, 1]"), ChangelogRow.parse("+U[a, 3]")], key=[0]).elements())
['a, 3']
"""

from __future__ import annotations

import decimal
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from planengine.ir.types import DataType
from planengine.testing.flink_rows import format_fields, parse_row

ADDS = ("+I", "+U")


@dataclass(frozen=True)
class ChangelogRow:
    kind: str
    fields: tuple[str, ...]

    @property
    def body(self) -> str:
        return ", ".join(self.fields)

    @property
    def text(self) -> str:
        return f"{self.kind}[{self.body}]"

    def __str__(self) -> str:
        return self.text

    @staticmethod
    def parse(text: str) -> ChangelogRow:
        kind, fields = parse_row(text)
        return ChangelogRow(kind, fields)

    @staticmethod
    def of(kind: str, values: Sequence[Any], types: Sequence[DataType] | None = None) -> ChangelogRow:
        return ChangelogRow(kind, format_fields(list(values), list(types) if types else None))


def materialize(rows: Iterable[ChangelogRow], key: Sequence[int] | None = None) -> Counter[str]:
    """The table a changelog leaves behind, as a multiset of row bodies (``a, 2``). Removing a row that is
    not there leaves a negative count, so a bad retraction shows up in comparisons."""
    if key:
        table: dict[tuple[str, ...], str] = {}
        for r in rows:
            k = tuple(r.fields[i] if i < len(r.fields) else "" for i in key)
            if r.kind in ADDS:
                table[k] = r.body
            else:
                table.pop(k, None)
        return Counter(table.values())
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.body] = counts.get(r.body, 0) + (1 if r.kind in ADDS else -1)
    out: Counter[str] = Counter()
    for body, n in counts.items():
        if n:
            out[body] = n  # Counter keeps negative counts given directly
    return out


def changelog_counter(rows: Iterable[ChangelogRow]) -> Counter[str]:
    return Counter(r.text for r in rows)


def committed_files(directory: str | Path) -> list[Path]:
    """Data files of a Spark file sink that its ``_spark_metadata`` log committed, in batch order (an
    aborted batch's leftovers are not listed). No log: no committed output."""
    meta = Path(directory) / "_spark_metadata"
    if not meta.is_dir():
        return []

    def batch_of(p: Path) -> int:
        try:
            return int(p.name.split(".")[0])
        except ValueError:
            return -1

    seen: dict[str, int] = {}
    deleted: set[str] = set()
    order = 0
    for log in sorted((p for p in meta.iterdir() if batch_of(p) >= 0 and not p.name.startswith(".")),
                      key=lambda p: (batch_of(p), p.name)):
        for line in log.read_text(encoding="utf-8").splitlines()[1:]:
            if not line.strip():
                continue
            entry = json.loads(line)
            path = unquote(urlparse(entry["path"]).path)
            if entry.get("action", "add") == "delete":
                deleted.add(path)
            elif path not in seen:
                seen[path] = order
                order += 1
    return [Path(p) for p, _ in sorted(seen.items(), key=lambda kv: kv[1]) if p not in deleted and Path(p).exists()]


def read_changelog_json(directory: str | Path, names: Sequence[str], types: Sequence[DataType],
                        op_field: str = "op") -> list[ChangelogRow]:
    """A ``changelog-json`` sink's committed rows, formatted as Flink prints them (``types`` per column)."""
    rows: list[ChangelogRow] = []
    for path in committed_files(directory):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                obj = json.loads(line, parse_float=decimal.Decimal)
                rows.append(ChangelogRow.of(obj.get(op_field) or "+I", [obj.get(n) for n in names], types))
    return rows
