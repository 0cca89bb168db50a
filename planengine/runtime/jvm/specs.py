"""What the engine hands each JVM operator family: one frozen dataclass per family, the Python half of a pair.

The other half is a Java record of ``io.planengine.jvm.spec`` with the same fields (``DeduplicateSpec`` here,
``io.planengine.jvm.spec.DeduplicateSpec`` there). A dataclass's ``to_json()`` is exactly the JSON object its
record's ``from(Spec)`` reads: field ``snake_case`` here is key ``camelCase`` there, a nested dataclass is a nested
record, ``tuple[X, ...]`` a list, ``X | None`` a ``@Nullable`` component. Why a pair and not a dict: a field one
side renames or forgets fails a test (``tests/jvm/spec_pairs.py``, run by the ``jvm`` step) instead of reaching a
JVM as a missing key at query start, and a reader finds every field of a spec in one place on each side.

The JSON keys are the ones the plans' operators have always been given: a spec travels with no plan or state, so
its form is free to change, but it changes on both sides at once, never by one builder.

>>> SortKeySpec(field=2, ascending=False, nulls_first=False).to_json()
{'field': 2, 'ascending': False, 'nullsFirst': False}
>>> KeyedRowCountSpec(keys=(0,)).to_text()
'{"keys":[0]}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, NewType

# A Spark SQL type in DDL text (``DECIMAL(38,2)``, ``TIMESTAMP_NTZ``): the Java record holds it parsed, as a
# ``DataType``, so a bad type fails with its path when the spec is read.
SparkType = NewType("SparkType", str)

# Metadata of a field that is left out of the JSON when None (rather than written as null): keys that older node
# versions never sent and the Java side reads as absent.
OMIT_NONE = {"omit_none": True}


def camel(name: str) -> str:
    """The JSON key (and Java record component) of a dataclass field.

    >>> camel("state_ttl_ms"), camel("is_rowtime"), camel("width")
    ('stateTtlMs', 'isRowtime', 'width')
    """
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _json(value: Any) -> Any:
    if isinstance(value, JvmSpec):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    return value


@dataclass(frozen=True)
class JvmSpec:
    """A family's spec: ``to_json()`` is the object its Java record reads; ``to_text()`` what crosses Py4J."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[camel(f.name)] = _json(value)
        return out

    def to_text(self) -> str:
        """The JSON text handed to ``Operators.<entry>`` (keys sorted: one spec, one text)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class AggCallSpec(JvmSpec):
    """One aggregate call: function (name, version), argument and FILTER positions in the operator's input,
    DISTINCT, the result type and the literal operands (LISTAGG's separator). Shared by the group aggregate, OVER
    and session families (``io.planengine.jvm.agg.AggCall.bind``)."""

    function: str
    version: int
    args: tuple[int, ...]
    filter_arg: int | None
    distinct: bool
    result_type: SparkType
    constants: tuple[str | None, ...]


@dataclass(frozen=True)
class GroupAggregateSpec(JvmSpec):
    """``stream-exec-group-aggregate`` (``ops.aggregate``)."""

    grouping: tuple[int, ...]
    agg_calls: tuple[AggCallSpec, ...]
    output_types: tuple[SparkType, ...]
    need_retraction: bool
    input_updating: bool
    generate_update_before: bool
    mini_batch: bool
    state_ttl_ms: int
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class DeduplicateSpec(JvmSpec):
    """``stream-exec-deduplicate`` (``ops.dedup``): ``insert_only`` is the node's output changelog."""

    unique_keys: tuple[int, ...]
    keep_last_row: bool
    is_rowtime: bool
    order_field: int
    generate_update_before: bool
    insert_only: bool
    state_ttl_ms: int
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class ChangelogNormalizeSpec(JvmSpec):
    """``stream-exec-changelog-normalize`` (``ops.normalize``)."""

    unique_keys: tuple[int, ...]
    generate_update_before: bool
    state_ttl_ms: int
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class UpsertMaterializeSpec(JvmSpec):
    """The sink's upsert materializer (``ops.materialize``): the sink key's positions in its input."""

    upsert_keys: tuple[int, ...]
    state_ttl_ms: int
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class JoinSpec(JvmSpec):
    """``stream-exec-join`` (``ops.join``): key positions within each side, ``filter_nulls`` 1 or 0 per key, and
    the non-equi condition as Spark SQL over ``l0..``/``r0..`` (``join_3``; left out without one)."""

    join_type: str
    left_width: int
    right_width: int
    left_keys: tuple[int, ...]
    right_keys: tuple[int, ...]
    filter_nulls: tuple[int, ...]
    insert_only: bool
    state_ttl_ms: int
    state_names: tuple[str, ...]
    condition: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class SortKeySpec(JvmSpec):
    """One sort key of a Top-N with Flink's NULL ordering."""

    field: int
    ascending: bool
    nulls_first: bool


@dataclass(frozen=True)
class RankSpec(JvmSpec):
    """Top-N (``ops.rank``) of ``stream-exec-rank`` and of a sort-limit. ``strategy`` and ``unique_key`` are
    Flink's strategy as ``rank_3`` records it; a ``rank_2`` plan has none (left out: the processor derives it)."""

    partition_keys: tuple[int, ...]
    order: tuple[SortKeySpec, ...]
    rank_type: str
    rank_start: int
    rank_end: int
    output_rank_number: bool
    generate_update_before: bool
    input_updating: bool
    insert_only: bool
    state_ttl_ms: int
    state_names: tuple[str, ...]
    strategy: str | None = field(default=None, metadata=OMIT_NONE)
    unique_key: tuple[int, ...] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class OverAggregateSpec(JvmSpec):
    """Event-time OVER (``ops.over``): ``width`` data fields, then the epoch-ms time at ``time_field`` and the
    per-record watermark at ``record_watermark_field`` (None without one); ``lower`` rows or ms, None unbounded."""

    width: int
    time_field: int
    record_watermark_field: int | None
    partition_keys: tuple[int, ...]
    mode: str
    lower: int | None
    agg_calls: tuple[AggCallSpec, ...]
    state_ttl_ms: int
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class SessionAggregateSpec(JvmSpec):
    """SESSION windows over other keys than the grouping (``ops.session``): the input as OVER's."""

    width: int
    time_field: int
    record_watermark_field: int | None
    partition_keys: tuple[int, ...]
    grouping: tuple[int, ...]
    gap_ms: int
    agg_calls: tuple[AggCallSpec, ...]
    state_ttl_ms: int
    state_names: tuple[str, ...]


@dataclass(frozen=True)
class RecordWatermarkSpec(JvmSpec):
    """The per-record watermark pass (``ops.watermark``): not an operator, a column over the rowtime."""

    rowtime: str
    delay_ms: int
    interval_ms: int
    column: str


@dataclass(frozen=True)
class KeyedRowCountSpec(JvmSpec):
    """The diagnostic row counter (``ops.probe``)."""

    keys: tuple[int, ...]


# Every family's spec, for the pair check (tests/jvm/spec_pairs.py) and whoever lists them.
SPECS: tuple[type[JvmSpec], ...] = (
    AggCallSpec, GroupAggregateSpec, DeduplicateSpec, ChangelogNormalizeSpec, UpsertMaterializeSpec, JoinSpec,
    SortKeySpec, RankSpec, OverAggregateSpec, SessionAggregateSpec, RecordWatermarkSpec, KeyedRowCountSpec,
)
