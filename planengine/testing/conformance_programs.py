"""Conformance programs (``<conformance dir>/flink-programs/*.yaml``, schema in the README beside them).

``load_programs`` reads every family file into ``ConformanceProgram`` objects (their tables:
``ConformanceTable``); ``ConformanceProgram.ddl(root)`` renders ``filesystem`` tables over ``<root>/<table>``:
sources as ``json`` (insert-only rows) or ``changelog-json`` (rows carrying a row kind, or a declared
``'changelog-mode'``, which is kept so upsert and retract sources stay distinct), sinks as ``changelog-json``
with their PRIMARY KEY. Flink test-connector options without a meaning here are dropped (``DROPPED_OPTIONS``).
``json_lines`` turns source rows (physical values in schema order, Java-printed timestamps and decimals) into
the JSON lines the filesystem source reads.
"""

from __future__ import annotations

import decimal
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from planengine.ir.types import DataType, Kind
from planengine.testing.changelog import ChangelogRow
from planengine.testing.flink_rows import parse_timestamp

# Flink TestValues options with no semantic meaning for a filesystem table (README "Option meanings").
DROPPED_OPTIONS = frozenset({"key-only-deletes", "lookup", "filterable-fields", "enable-watermark-push-down",
                             "readable-metadata", "async"})
# Sink options Flink's test sink understands that our filesystem sink has no equivalent for.
UNMAPPED_SINK_OPTIONS = frozenset({"sink-changelog-mode"})


def default_conformance_dir(repo_root: str | Path) -> Path:
    """``$CONFORMANCE_DIR``, else ``<repo>/../shared/conformance``."""
    env = os.environ.get("CONFORMANCE_DIR")
    return Path(env) if env else (Path(repo_root).resolve().parent / "shared" / "conformance")


@dataclass
class ConformanceTable:
    name: str
    schema: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    before: list[Any] = field(default_factory=list)
    after: list[Any] = field(default_factory=list)
    materialized: bool = False
    upsert_key_indices: list[int] | None = None
    ordered: bool = False

    @property
    def has_row_kinds(self) -> bool:
        return any(isinstance(r, dict) for r in [*self.before, *self.after])

    @property
    def changelog_mode(self) -> str | None:
        mode = self.options.get("changelog-mode")
        return None if mode is None else str(mode)

    @property
    def is_lookup(self) -> bool:
        return str(self.options.get("lookup", "false")).lower() == "true"



@dataclass
class ConformanceProgram:
    family: str
    id: str
    statement: str
    sources: list[ConformanceTable]
    sinks: list[ConformanceTable]
    config: dict[str, str] = field(default_factory=dict)
    requires: list[str] = field(default_factory=list)
    functions: list[dict[str, Any]] = field(default_factory=list)
    restore_split: bool = True
    timing_sensitive: bool = False
    description: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.family}/{self.id}"

    def source_format(self, source: ConformanceTable) -> str:
        return "changelog-json" if source.has_row_kinds or source.changelog_mode is not None else "json"

    def ddl(self, root: str | Path, udf_module: str | None = None) -> str:
        """Functions (when ``udf_module`` names the Python module holding them), then every table."""
        root = Path(root)
        parts: list[str] = []
        if udf_module:
            for fn in self.functions:
                if fn.get("kind", "scalar") not in ("scalar", "table", "aggregate"):
                    continue  # e.g. a temporal table function: Table API only, no DDL
                scope = fn.get("scope", "temporary-system")
                kind = {"temporary-system": "TEMPORARY SYSTEM FUNCTION", "temporary-catalog": "TEMPORARY FUNCTION",
                        "catalog": "FUNCTION"}.get(scope, "TEMPORARY SYSTEM FUNCTION")
                parts.append(f"CREATE {kind} {fn['name']} AS '{udf_module}.{fn['name']}' LANGUAGE PYTHON")
        for s in self.sources:
            opts = {"connector": "filesystem", "path": str(root / s.name), "format": self.source_format(s)}
            if s.changelog_mode is not None:
                opts["changelog-mode"] = s.changelog_mode
            opts.update({k: str(v) for k, v in s.options.items()
                         if k not in DROPPED_OPTIONS and k != "changelog-mode"})
            parts.append(_create_table(s, opts))
        for s in self.sinks:
            opts = {"connector": "filesystem", "path": str(root / s.name), "format": "changelog-json"}
            opts.update({k: str(v) for k, v in s.options.items()
                         if k not in DROPPED_OPTIONS and k not in UNMAPPED_SINK_OPTIONS})
            parts.append(_create_table(s, opts))
        return ";\n".join(parts) + ";\n"

    def session_config(self) -> dict[str, str]:
        return {k: _option_text(v) for k, v in self.config.items()}


def _option_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _create_table(spec: ConformanceTable, options: dict[str, str]) -> str:
    with_ = ", ".join(f"'{k}' = '{str(v).replace(chr(39), chr(39) * 2)}'" for k, v in options.items())
    columns = ",\n  ".join(spec.schema)
    return f"CREATE TABLE {spec.name} (\n  {columns}\n) WITH ({with_})"


def _table(d: dict[str, Any]) -> ConformanceTable:
    return ConformanceTable(name=d["name"], schema=list(d.get("schema") or []),
                            options=dict(d.get("options") or {}), before=list(d.get("before") or []),
                            after=list(d.get("after") or []),
                            materialized=bool(d.get("materialized")),
                            upsert_key_indices=d.get("upsert_key_indices"), ordered=bool(d.get("ordered")))


def load_programs(conformance_dir: str | Path) -> list[ConformanceProgram]:
    """Every program of ``<dir>/flink-programs/*.yaml`` (or ``<dir>/*.yaml``), in file then program order."""
    base = Path(conformance_dir)
    folder = base / "flink-programs" if (base / "flink-programs").is_dir() else base
    out: list[ConformanceProgram] = []
    for path in sorted(folder.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        family = doc.get("family") or path.stem
        for p in doc.get("programs") or []:
            out.append(ConformanceProgram(
                family=family, id=p["id"], statement=p["statement"],
                sources=[_table(s) for s in p.get("sources") or []], sinks=[_table(s) for s in p.get("sinks") or []],
                config=dict(p.get("config") or {}), requires=list(p.get("requires") or []),
                functions=list(p.get("functions") or []), restore_split=p.get("restore_split", True) is not False,
                timing_sensitive=bool(p.get("timing_sensitive")), description=p.get("description", ""), raw=p))
    return out


# --- source rows -------------------------------------------------------------------------------------------
def row_kind_and_values(row: Any) -> tuple[str, list[Any]]:
    if isinstance(row, dict):
        return str(row.get("kind", "+I")), list(row.get("values") or [])
    return "+I", list(row)


def json_value(v: Any, t: DataType) -> Any:
    """A Java-printed source value as the JSON value Spark's reader parses into the column's type."""
    if v is None:
        return None
    k = t.kind
    if k is Kind.TIMESTAMP and isinstance(v, str):
        value, _, _ = parse_timestamp(v)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if k is Kind.TIMESTAMP_LTZ and isinstance(v, str):
        value, _, _ = parse_timestamp(v)
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if k is Kind.DECIMAL:
        return decimal.Decimal(str(v))
    if k in (Kind.DOUBLE, Kind.FLOAT) and isinstance(v, int | str) and not isinstance(v, bool):
        return float(v)
    if k is Kind.ROW:
        values = list(v.values()) if isinstance(v, dict) else list(v)
        return {f.name: json_value(x, f.type) for f, x in zip(t.fields, values)}
    if k in (Kind.ARRAY, Kind.MULTISET) and t.element is not None:
        return [json_value(x, t.element) for x in v]
    if k is Kind.MAP and isinstance(v, dict) and t.value is not None:
        return {str(key): json_value(x, t.value) for key, x in v.items()}
    return v


_DEC_MARK = "@@decimal:"
_DEC_RE = re.compile(r'"@@decimal:([-0-9.Ee+]+)"')


def _raw_decimals(v: Any) -> Any:
    """Decimals become marked strings, unquoted after ``json.dumps`` so they stay exact JSON numbers."""
    if isinstance(v, decimal.Decimal):
        return _DEC_MARK + format(v, "f")
    if isinstance(v, dict):
        return {k: _raw_decimals(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_raw_decimals(x) for x in v]
    return v


def json_lines(rows: Sequence[Any], names: Sequence[str], types: Sequence[DataType], changelog: bool,
               op_field: str = "op") -> str:
    """Source rows as JSON lines (``op`` carries the row kind for ``changelog-json``)."""
    lines = []
    for row in rows:
        kind, values = row_kind_and_values(row)
        obj = {n: _raw_decimals(json_value(v, t)) for n, t, v in zip(names, types, values)}
        if changelog:
            obj[op_field] = kind
        lines.append(_DEC_RE.sub(r"\1", json.dumps(obj, allow_nan=True)))
    return "".join(line + "\n" for line in lines)


def expected_rows(rows: Sequence[Any], types: Sequence[DataType]) -> list[ChangelogRow]:
    """Expected sink rows: Flink strings verbatim, ``Row.of`` lists (``+I``) and ``{kind, values}`` formatted."""
    out = []
    for r in rows:
        if isinstance(r, str):
            out.append(ChangelogRow.parse(r))
        else:
            kind, values = row_kind_and_values(r)
            out.append(ChangelogRow.of(kind, values, types))
    return out
