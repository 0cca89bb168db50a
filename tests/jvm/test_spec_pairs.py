"""The spec pair check itself (``tests/jvm/spec_pairs.py``), on listings written here: no JVM, fast tier.

The check against the real records runs in the ``jvm`` step (``python -m tests.jvm.run``), which lists them with
``SpecRecords``; these tests show it fails for each way a pair can drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planengine.runtime.jvm.specs import SPECS, JvmSpec, SparkType
from tests.jvm.spec_pairs import mismatches, python_fields, shape_of_java

INT = {"class": "int"}
LONG = {"class": "long"}
STRING = {"class": "java.lang.String"}
STRINGS = {"class": "java.util.List", "args": [STRING]}


@dataclass(frozen=True)
class ProbeSpec(JvmSpec):
    keys: tuple[int, ...]
    state_ttl_ms: int
    result_type: SparkType
    condition: str | None = field(default=None)


PROBE_RECORD = {"keys": {"array": INT}, "stateTtlMs": LONG,
                "resultType": {"class": "org.apache.spark.sql.types.DataType"},
                "condition": {"class": "java.lang.String", "nullable": True}}


def test_a_pair_with_the_same_fields_agrees():
    assert mismatches({"ProbeSpec": PROBE_RECORD}, [ProbeSpec]) == {"ProbeSpec": []}


def test_a_field_added_on_the_python_side_only_fails():
    @dataclass(frozen=True)
    class ProbeSpec(JvmSpec):  # the same name, one field more
        keys: tuple[int, ...]
        state_ttl_ms: int
        result_type: SparkType
        insert_only: bool
        condition: str | None = None

    assert mismatches({"ProbeSpec": PROBE_RECORD}, [ProbeSpec]) == {
        "ProbeSpec": ["field insertOnly is in the dataclass only"]}


def test_a_component_added_on_the_java_side_only_fails():
    record = {**PROBE_RECORD, "stateNames": STRINGS}
    assert mismatches({"ProbeSpec": record}, [ProbeSpec]) == {
        "ProbeSpec": ["component stateNames is in the record only"]}


def test_types_must_map_to_the_same_shape():
    record = {**PROBE_RECORD, "keys": STRINGS, "condition": STRING}
    assert mismatches({"ProbeSpec": record}, [ProbeSpec]) == {"ProbeSpec": [
        "condition is optional[str] in Python but str in Java",
        "keys is list[int] in Python but list[str] in Java"]}


def test_a_record_or_a_dataclass_without_its_other_half_fails():
    found = mismatches({"ProbeSpec": PROBE_RECORD, "LonelySpec": {}}, [ProbeSpec, SPECS[0]])
    assert found["LonelySpec"] == [
        "the record io.planengine.jvm.spec.LonelySpec has no dataclass in planengine/runtime/jvm/specs.py (SPECS)"]
    assert found[SPECS[0].__name__] == [f"the dataclass specs.{SPECS[0].__name__} has no record "
                                        f"io.planengine.jvm.spec.{SPECS[0].__name__}"]


def test_the_vocabulary_of_both_sides():
    assert shape_of_java({"class": "java.util.List", "args": [{"class": "java.lang.String", "nullable": True}]}) == (
        "list[optional[str]]")
    assert shape_of_java({"class": "io.planengine.jvm.spec.AggCallSpec"}) == "AggCallSpec"
    assert shape_of_java({"class": "java.lang.Long", "nullable": True}) == "optional[int]"
    assert shape_of_java({"class": "int", "nullable": True}).startswith("unmapped")
    assert shape_of_java({"class": "java.util.Map", "args": []}).startswith("unmapped")
    shapes = {spec.__name__: python_fields(spec) for spec in SPECS}
    assert shapes["AggCallSpec"]["constants"] == "list[optional[str]]"
    assert shapes["RankSpec"]["order"] == "list[SortKeySpec]"
    assert shapes["RankSpec"]["uniqueKey"] == "optional[list[int]]"
    assert shapes["GroupAggregateSpec"]["outputTypes"] == "list[spark_type]"
    assert not any("unmapped" in shape for fields in shapes.values() for shape in fields.values())
