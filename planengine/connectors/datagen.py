"""``'connector' = 'datagen'``: generated rows for demos and tests; insert-only.

Each physical column is generated independently, configured by ``fields.<column>.<property>``. The set of
valid keys depends on the table (columns and their types), so the factory derives those options from the
schema and validates them with the rest: a key naming an unknown column gets a did-you-mean on the
*column* name. The runtime reads typed ``FieldGenerator``s from the source, never option strings.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planengine.connectors.base import ScanContext, ScanRuntimeProvider, ScanTableSource
from planengine.connectors.factories import DynamicTableSourceFactory, FactoryContext
from planengine.connectors.helper import TableFactoryHelper
from planengine.connectors.options import (
    FLOAT,
    INT,
    ConfigOption,
    OptionProblems,
    OptionType,
    ValidatedOptions,
    duration_option,
    enum_option,
    float_option,
    int_option,
    non_negative,
    option,
    positive,
)
from planengine.connectors.projection import ProducedRow, TopLevelProjection
from planengine.ir.changelog import INSERT_ONLY, ChangelogMode
from planengine.ir.schema import Column, ResolvedSchema
from planengine.ir.types import BINARY_STRING, CHARACTER, DataType, Kind

ROWS_PER_SECOND = int_option("rows-per-second", default=10000, type_=positive(INT),
                             description="Rows generated per second (across the whole source).")
NUMBER_OF_ROWS = int_option("number-of-rows", type_=non_negative(INT),
                            description="Total rows to generate; makes the source bounded. Unset: unbounded "
                            "(unless a sequence field runs out).")

KINDS = ("random", "sequence")
_SIZED = (*CHARACTER, *BINARY_STRING, Kind.ARRAY, Kind.MAP, Kind.MULTISET)
_PROPERTIES = ("kind", "min", "max", "max-past", "length", "start", "end", "null-rate")
_FIELD_PROPERTY_DOCS = {
    "kind": "'random' (default) or 'sequence'.",
    "min": "Smallest random value (numeric columns).",
    "max": "Largest random value (numeric columns).",
    "max-past": "Random timestamps lie at most this far before now (timestamp columns).",
    "length": "Length of random strings/bytes, or size of collections.",
    "start": "First value of a sequence (integral and string columns).",
    "end": "Last value of a sequence (integral and string columns).",
    "null-rate": "Fraction of nulls, 0.0 to 1.0.",
}


def _applicable(prop: str, t: DataType) -> bool:
    if prop in ("kind", "null-rate"):
        return True
    if prop in ("min", "max"):
        return t.is_numeric
    if prop == "max-past":
        return t.is_timestamp
    if prop == "length":
        return t.kind in _SIZED
    return t.is_integral or t.is_string  # start / end


def _field_options(column: Column) -> list[ConfigOption[Any]]:
    """The ``fields.<column>.*`` options valid for this column's type."""
    t = column.type
    prefix = f"fields.{column.name}."
    out: list[ConfigOption[Any]] = []
    for prop in _PROPERTIES:
        if not _applicable(prop, t):
            continue
        doc = _FIELD_PROPERTY_DOCS[prop]
        key = prefix + prop
        if prop == "kind":
            out.append(enum_option(key, KINDS, default="random", description=doc))
        elif prop in ("min", "max"):
            out.append(option(key, INT if t.is_integral else FLOAT, description=doc))
        elif prop == "max-past":
            out.append(duration_option(key, default="0 ms", description=doc))
        elif prop == "length":
            out.append(option(key, positive(INT), default=100 if t.kind in (*CHARACTER, *BINARY_STRING) else 3,
                              description=doc))
        elif prop in ("start", "end"):
            out.append(option(key, INT, description=doc))
        else:
            out.append(option(key, FLOAT, default=0.0, description=doc))
    return out


@dataclass(frozen=True)
class FieldGenerator:
    """How the runtime generates one column."""

    column: str
    type: DataType
    kind: str  # random | sequence
    min: int | float | None = None
    max: int | float | None = None
    max_past_ms: int | None = None
    length: int | None = None
    start: int | None = None
    end: int | None = None
    null_rate: float = 0.0


class DataGenTableSource(ScanTableSource, TopLevelProjection):
    def __init__(self, identifier: object, schema: ResolvedSchema, options: ValidatedOptions):
        self.identifier = identifier
        self.schema = schema
        self.options = options
        self.row = ProducedRow(schema.physical_row_type())

    @property
    def rows_per_second(self) -> int:
        return self.options.value(ROWS_PER_SECOND)  # type: ignore[return-value]

    @property
    def number_of_rows(self) -> int | None:
        return self.options.value(NUMBER_OF_ROWS)

    def generators(self) -> list[FieldGenerator]:
        """One generator per produced column, in produced order (projection applied)."""
        columns = self.schema.physical_columns
        out = []
        for i in self.row.physical_indices:
            c = columns[i]

            def get(prop: str, column: Column = c) -> Any:
                return self.options.get(f"fields.{column.name}.{prop}")

            out.append(FieldGenerator(c.name, c.type, get("kind") or "random", get("min"), get("max"),
                                      get("max-past"), get("length"), get("start"), get("end"),
                                      get("null-rate") or 0.0))
        return out

    @property
    def is_bounded(self) -> bool:
        """Bounded with ``number-of-rows`` or when a sequence field (which ends) is generated."""
        return self.number_of_rows is not None or any(g.kind == "sequence" for g in self.generators())

    def changelog_mode(self) -> ChangelogMode:
        return INSERT_ONLY

    def scan_runtime_provider(self, ctx: ScanContext) -> ScanRuntimeProvider:
        return ScanRuntimeProvider("datagen", self, is_bounded=self.is_bounded)

    def as_summary_string(self) -> str:
        parts = [f"rows-per-second={self.rows_per_second}"]
        if self.number_of_rows is not None:
            parts.append(f"number-of-rows={self.number_of_rows}")
        if self.row.projection is not None:
            parts.append("project=[" + ", ".join(self.row.physical_names) + "]")
        return "datagen(" + ", ".join(parts) + ")"


class DataGenTableFactory(DynamicTableSourceFactory):
    factory_identifier = "datagen"
    description = "Generated rows (random values or sequences), bounded or unbounded. Insert-only."
    changelog_doc = "Source: insert-only (I). Bounded with 'number-of-rows' or when a sequence field is generated."
    source_class = DataGenTableSource

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (ROWS_PER_SECOND, NUMBER_OF_ROWS)

    def mutable_options(self) -> frozenset[str]:
        return frozenset({ROWS_PER_SECOND.key})

    def documented_pattern_options(self) -> Sequence[ConfigOption[Any]]:
        number = OptionType("Number", float)
        docs = _FIELD_PROPERTY_DOCS
        return (
            enum_option("fields.<column>.kind", KINDS, default="random", description=docs["kind"]),
            option("fields.<column>.min", number, description=docs["min"]),
            option("fields.<column>.max", number, description=docs["max"]),
            duration_option("fields.<column>.max-past", default="0 ms", description=docs["max-past"]),
            int_option("fields.<column>.length", description=docs["length"] + " Default 100 for strings, "
                       "3 for collections."),
            int_option("fields.<column>.start", description=docs["start"]),
            int_option("fields.<column>.end", description=docs["end"]),
            float_option("fields.<column>.null-rate", default=0.0, description=docs["null-rate"]),
        )

    def create_dynamic_table_source(self, ctx: FactoryContext) -> DataGenTableSource:
        schema = ctx.schema
        physical = schema.physical_columns
        field_options = [o for c in physical for o in _field_options(c)]
        helper = TableFactoryHelper(self, ctx)
        options = helper.validate(
            extra_options=field_options,
            unknown_key_hint=lambda key: _unknown_field_hint(key, schema),
            checks=(lambda values, problems: _check_fields(values, problems, physical),),
        )
        return DataGenTableSource(ctx.identifier, schema, options)


def _unknown_field_hint(key: str, schema: ResolvedSchema) -> str | None:
    """Explain ``fields.<column>.<property>`` problems by column and property, not by spelling distance."""
    if not key.startswith("fields."):
        return None
    column, _, prop = key[len("fields."):].rpartition(".")
    if not column:
        return f"datagen field options look like 'fields.<column>.<property>' with property one of {list(_PROPERTIES)}"
    names = schema.column_names()
    if column not in names:
        physical = [c.name for c in schema.physical_columns]
        close = difflib.get_close_matches(column, physical, n=1, cutoff=0.5)
        guess = f"did you mean column '{close[0]}'? " if close else ""
        return f"{guess}the table has no column '{column}' (columns: {', '.join(physical)})"
    col = schema.column(column)
    if col.kind != "physical":
        return f"column '{column}' is a {col.kind} column; datagen generates physical columns only"
    if prop in _PROPERTIES:
        return f"'{prop}' does not apply to column '{column}' of type {col.type}"
    close = difflib.get_close_matches(prop, _PROPERTIES, n=1, cutoff=0.5)
    guess = f"did you mean 'fields.{column}.{close[0]}'? " if close else ""
    return f"{guess}field properties are {', '.join(_PROPERTIES)}"


def _check_fields(values: ValidatedOptions, problems: OptionProblems, columns: Sequence[Column]) -> None:
    for c in columns:
        def get(prop: str, column: Column = c) -> Any:
            return values.get(f"fields.{column.name}.{prop}")

        key = f"fields.{c.name}"
        kind = get("kind")
        if kind == "sequence":
            if not (c.type.is_integral or c.type.is_string):
                problems.other.append(f"'{key}.kind' = 'sequence' needs an integral or string column; "
                                      f"'{c.name}' is {c.type}")
            elif get("start") is None or get("end") is None:
                problems.other.append(f"'{key}.kind' = 'sequence' needs both '{key}.start' and '{key}.end'")
            elif get("start") > get("end"):
                problems.other.append(f"'{key}.start' ({get('start')}) is greater than '{key}.end' ({get('end')})")
        else:
            for prop in ("start", "end"):
                if get(prop) is not None:
                    problems.other.append(f"'{key}.{prop}' only applies to sequences; set '{key}.kind' = 'sequence'")
        if get("min") is not None and get("max") is not None and get("min") > get("max"):
            problems.other.append(f"'{key}.min' ({get('min')}) is greater than '{key}.max' ({get('max')})")
        rate = get("null-rate")
        if rate is not None and not 0.0 <= rate <= 1.0:
            problems.other.append(f"'{key}.null-rate' must be between 0.0 and 1.0, not {rate}")
        if rate and not c.type.nullable:
            problems.other.append(f"'{key}.null-rate' is {rate} but column '{c.name}' is NOT NULL")
