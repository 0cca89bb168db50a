import datetime as dt
import json

import pytest

from planengine.connectors import restore as connector_restore
from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.connectors.restore import apply_spec, apply_specs, restore_table_source
from planengine.errors import PlanIncompatible
from planengine.exec.specs import (
    SPEC_TYPES,
    FilterPushDownSpec,
    LimitPushDownSpec,
    OverwriteSpec,
    PartitioningSpec,
    PartitionPushDownSpec,
    ProjectPushDownSpec,
    ReadingMetadataSpec,
    WatermarkPushDownSpec,
    WritingMetadataSpec,
    spec_from_json,
    specs_from_json,
    specs_to_json,
)
from planengine.ir import types as T
from planengine.ir.expressions import Call, FunctionRef
from tests.connectors.builders import build_ctx, call, lit, ref

ROW = T.row(("a", T.INT), ("dt", T.STRING))
HEADERS = T.map_(T.STRING, T.BYTES).with_nullable(False)

SPECS = [
    ProjectPushDownSpec(((0,), (2,)), ROW),
    FilterPushDownSpec((call(">", ref(0), lit(5)), call("IS NULL", ref(1, T.STRING)))),
    LimitPushDownSpec(10),
    WatermarkPushDownSpec(Call(FunctionRef("-"), (ref(2, T.timestamp(3)), lit(dt.timedelta(seconds=5),
                                                                                T.INTERVAL_DAY_TIME)),
                               T.timestamp(3)), 60_000, ROW),
    WatermarkPushDownSpec(ref(2, T.timestamp(3)), None, ROW),
    PartitionPushDownSpec.of([{"dt": "2024-01-01", "h": "1"}, {"h": "2", "dt": "2024-01-02"}]),
    ReadingMetadataSpec(("topic", "offset"), T.row(("a", T.INT), ("topic", T.STRING), ("offset", T.BIGINT))),
    OverwriteSpec(True),
    PartitioningSpec.of({"dt": "2024-01-01"}),
    WritingMetadataSpec(("headers",), T.row(("a", T.INT), ("headers", HEADERS))),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.TYPE)
def test_json_round_trip(spec):
    data = spec.to_json()
    assert spec_from_json(json.loads(json.dumps(data))) == spec


def test_every_spec_type_is_covered():
    assert {s.TYPE for s in SPECS} == set(SPEC_TYPES)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.TYPE)
def test_json_is_declarative_and_deterministic(spec):
    text = json.dumps(spec.to_json())
    assert json.dumps(spec_from_json(json.loads(text)).to_json()) == text  # same bytes, same key order
    assert next(iter(spec.to_json())) == "type"
    assert "planengine" not in text and "Spec" not in text


def test_partition_maps_are_normalised_so_equal_specs_serialise_equally():
    a = PartitionPushDownSpec.of([{"dt": "1", "h": "2"}])
    b = PartitionPushDownSpec.of([{"h": "2", "dt": "1"}])
    assert a == b and json.dumps(a.to_json()) == json.dumps(b.to_json()) == \
        '{"type": "PartitionPushDown", "partitions": [{"dt": "1", "h": "2"}]}'


def test_exact_json_shapes():
    assert specs_to_json([LimitPushDownSpec(3), OverwriteSpec(False)]) == [
        {"type": "LimitPushDown", "limit": 3}, {"type": "Overwrite", "overwrite": False}]
    assert WatermarkPushDownSpec(ref(0, T.timestamp(3)), 1000, ROW).to_json() == {
        "type": "WatermarkPushDown",
        "watermarkExpr": {"kind": "INPUT_REF", "inputIndex": 0, "type": "TIMESTAMP(3)"},
        "idleTimeoutMillis": 1000,
        "producedType": "ROW<`a` INT, `dt` STRING>",
    }


def test_unknown_spec_type_is_incompatible():
    with pytest.raises(PlanIncompatible, match="unknown ability spec type 'AggregatePushDown'"):
        specs_from_json([{"type": "AggregatePushDown"}])


def _fs_ctx():
    return build_ctx([("a", "INT"), ("b", "STRING"), ("dt", "STRING")],
                     {"connector": "filesystem", "path": "/nonexistent/x", "format": "json"}, partition_keys=("dt",))


def test_restore_reapplies_exactly_the_recorded_abilities():
    ctx = _fs_ctx()
    compiled = create_table_source(ctx)
    produced = T.row(("a", T.INT), ("dt", T.STRING))
    compiled.apply_projection([[0], [2]], produced)
    result = compiled.apply_filters([call("=", ref(1, T.STRING), lit("2024-01-01", T.STRING)),
                                     call(">", ref(0), lit(1))])
    compiled.apply_partitions([{"dt": "2024-01-01"}])
    compiled.apply_limit(5)
    specs = [ProjectPushDownSpec(((0,), (2,)), produced), FilterPushDownSpec(tuple(result.accepted)),
             PartitionPushDownSpec.of([{"dt": "2024-01-01"}]), LimitPushDownSpec(5)]
    plan_json = json.loads(json.dumps(specs_to_json(specs)))

    restored = restore_table_source(ctx, specs_from_json(plan_json))
    assert restored.as_summary_string() == compiled.as_summary_string() == (
        # the partition filter is kept over the table's physical row (dt is its third column), whatever the
        # projection applied before or after it
        "filesystem(path=/nonexistent/x, format=json, project=[a, dt], partitionFilter=[=($2, '2024-01-01')], "
        "partitions=1, limit=5)")
    assert restored.row.produced_type == produced


def test_a_connector_that_lost_an_ability_makes_the_plan_incompatible():
    datagen = create_table_source(build_ctx(options={"connector": "datagen"}))
    with pytest.raises(PlanIncompatible, match="no longer supports SupportsLimitPushDown"):
        apply_specs(datagen, [LimitPushDownSpec(3)])
    with pytest.raises(PlanIncompatible, match="no longer supports SupportsOverwriting"):
        apply_spec(create_table_sink(build_ctx(options={"connector": "print"})), OverwriteSpec(True))


def test_a_filter_the_source_no_longer_accepts_is_incompatible():
    source = create_table_source(_fs_ctx())
    # A non-partition filter: the filesystem source leaves it remaining, so the plan cannot drop it.
    with pytest.raises(PlanIncompatible, match=r"no longer accepts the pushed-down filter\(s\) >\(\$0, 1\)"):
        apply_spec(source, FilterPushDownSpec((call(">", ref(0), lit(1)),)))


def test_sink_specs_reapply():
    sink = create_table_sink(_fs_ctx())
    apply_specs(sink, specs_from_json([{"type": "Partitioning", "partition": {"dt": "2024-01-01"}},
                                       {"type": "Overwrite", "overwrite": True}]))
    assert sink.static_partition == {"dt": "2024-01-01"} and sink.overwrite is True


def test_project_spec_with_nested_paths_fails_on_sources_without_nested_projection():
    source = create_table_source(build_ctx(options={"connector": "datagen"}))
    with pytest.raises(PlanIncompatible, match="nested projection"):
        apply_spec(source, ProjectPushDownSpec(((0, 1),), ROW))


def test_every_spec_type_has_a_replay():
    """A spec the planner can record but restore cannot replay would fail only when an old plan is restored."""
    assert set(connector_restore._APPLY) == set(SPEC_TYPES.values())
