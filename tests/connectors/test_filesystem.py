import pytest

from planengine.connectors.base import ScanContext
from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.errors import OptionError, ValidationError
from planengine.ir import types as T
from planengine.ir.changelog import ALL, INSERT_ONLY, UPSERT
from tests.connectors.builders import build_ctx, call, lit, ref

COLUMNS = [("a", "INT"), ("b", "STRING"), ("dt", "STRING")]


def fs_ctx(path="/data/t", fmt="json", *, primary_key=None, columns=COLUMNS, **extra):
    options = {"connector": "filesystem", "path": str(path), "format": fmt, **extra}
    return build_ctx(columns, options, primary_key=primary_key, partition_keys=("dt",))


@pytest.mark.parametrize(("fmt", "mode"), [
    ("json", INSERT_ONLY), ("csv", INSERT_ONLY), ("parquet", INSERT_ONLY),
    ("debezium-json", ALL), ("changelog-json", ALL),
])
def test_source_and_sink_changelog_follow_the_format(fmt, mode):
    assert create_table_source(fs_ctx(fmt=fmt)).changelog_mode() == mode
    assert create_table_sink(fs_ctx(fmt=fmt)).changelog_mode(ALL) == mode


@pytest.mark.parametrize(("fmt", "declared", "expected"), [
    ("debezium-json", "I,UB,UA,D", ALL),
    ("changelog-json", "I", INSERT_ONLY),
    ("json", "I", INSERT_ONLY),
])
def test_changelog_mode_option_narrows(fmt, declared, expected):
    source = create_table_source(fs_ctx(fmt=fmt, **{"changelog-mode": declared}))
    assert source.changelog_mode() == expected
    assert not source.requires_normalization


def test_upsert_changelog_mode_needs_a_primary_key():
    with pytest.raises(OptionError) as info:
        create_table_source(fs_ctx(fmt="changelog-json", **{"changelog-mode": "I,UA,D"}))
    assert ("table `cat`.`db`.`t`: 'changelog-mode' = 'I,UA,D' declares an upsert source keyed by its primary key, "
            "but the table has no PRIMARY KEY") in str(info.value)
    assert "add PRIMARY KEY (…) NOT ENFORCED" in str(info.value)

    source = create_table_source(fs_ctx(fmt="changelog-json", primary_key=("a",), **{"changelog-mode": "I,UA,D"}))
    assert source.changelog_mode() == UPSERT and source.requires_normalization


def test_changelog_mode_on_an_insert_only_format_is_rejected():
    with pytest.raises(OptionError, match="needs a format that carries row kinds, but format 'json' is insert-only"):
        create_table_source(fs_ctx(fmt="json", primary_key=("a",), **{"changelog-mode": "I,UA,D"}))


def test_bad_changelog_mode_letters_are_reported_with_other_option_problems():
    with pytest.raises(OptionError) as info:
        create_table_source(fs_ctx(fmt="changelog-json", **{"changelog-mode": "I,UX", "pathh": "x"}))
    text = str(info.value)
    assert "option 'changelog-mode' = 'I,UX' is not valid: expected a changelog mode such as" in text
    assert "unknown option 'pathh': did you mean 'path'?" in text


def test_format_options_are_namespaced_and_validated_by_the_format():
    source = create_table_source(fs_ctx(**{"json.ignore-parse-errors": "true"}))
    assert source.format.options == {"ignore-parse-errors": True, "fail-on-missing-field": False,
                                     "timestamp-format.standard": "SQL"}
    with pytest.raises(OptionError) as info:
        create_table_source(fs_ctx(**{"json.timestamp-format.standard": "RFC", "csv.field-delimiter": ";"}))
    text = str(info.value)
    assert "option 'json.timestamp-format.standard' = 'RFC' is not valid: expected one of 'SQL', 'ISO-8601'" in text
    assert "unknown option 'csv.field-delimiter'" in text


def test_csv_rejects_nested_columns():
    with pytest.raises(OptionError, match="format 'csv' cannot hold nested columns: `tags` ARRAY<STRING>"):
        create_table_source(fs_ctx(fmt="csv", columns=[*COLUMNS, ("tags", "ARRAY<STRING>")]))


def test_changelog_json_rejects_an_op_column():
    with pytest.raises(OptionError, match="clashes with the column `op`"):
        create_table_sink(fs_ctx(fmt="changelog-json", columns=[*COLUMNS, ("op", "STRING")]))


def test_filters_on_partition_columns_only_are_accepted():
    source = create_table_source(fs_ctx())
    on_partition = call("=", ref(2, T.STRING), lit("2024-01-01", T.STRING))
    on_data = call(">", ref(0), lit(1))
    mixed = call("OR", on_partition, on_data)
    constant = call("=", lit(1), lit(1))
    result = source.apply_filters([on_partition, on_data, mixed, constant])
    assert result.accepted == [on_partition]
    assert result.remaining == [on_data, mixed, constant]


def test_filter_indices_follow_an_earlier_projection():
    source = create_table_source(fs_ctx())
    source.apply_projection([[2], [0]], T.row(("dt", T.STRING), ("a", T.INT)))
    on_dt = call("=", ref(0, T.STRING), lit("x", T.STRING))
    assert source.apply_filters([on_dt, call(">", ref(1), lit(0))]).accepted == [on_dt]
    assert source.row.physical_names == ["dt", "a"]


def test_projection_is_top_level_only():
    source = create_table_source(fs_ctx())
    assert source.supports_nested_projection() is False
    with pytest.raises(ValidationError, match="out of range"):
        source.apply_projection([[7]], T.row(("x", T.INT)))


def test_list_partitions_reads_local_directories(tmp_path):
    for name in ("dt=2024-01-01", "dt=2024-01-02", "dt=a%20b", "_temporary"):
        (tmp_path / name).mkdir()
    source = create_table_source(fs_ctx(tmp_path))
    assert source.list_partitions() == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}, {"dt": "a b"}]
    source.apply_partitions([{"dt": "2024-01-02"}])
    assert source.partitions == [{"dt": "2024-01-02"}]
    assert create_table_source(fs_ctx("s3://bucket/t")).list_partitions() is None
    with pytest.raises(ValidationError, match="non-partition columns"):
        source.apply_partitions([{"a": "1"}])


def test_bounded_unless_monitoring_the_directory():
    bounded = create_table_source(fs_ctx())
    assert bounded.scan_runtime_provider(ScanContext()).is_bounded is True
    streaming = create_table_source(fs_ctx(**{"source.monitor-interval": "10 s"}))
    provider = streaming.scan_runtime_provider(ScanContext())
    assert provider.is_bounded is False and streaming.monitor_interval_ms == 10_000


def test_sink_partitioning_and_overwrite():
    sink = create_table_sink(fs_ctx(**{"sink.rolling-policy.file-size": "64 mb"}))
    assert sink.options["sink.rolling-policy.file-size"] == 64 << 20
    sink.apply_static_partition({"dt": "2024-01-01"})
    sink.apply_overwrite(True)
    assert sink.requires_partition_grouping(False)
    assert sink.as_summary_string() == "filesystem(path=/data/t, format=json, partition=dt=2024-01-01, overwrite)"
    with pytest.raises(ValidationError, match="not partition columns"):
        sink.apply_static_partition({"a": "1"})


def test_partition_keys_must_be_columns():
    ctx = build_ctx(COLUMNS, {"connector": "filesystem", "path": "/x", "format": "json"}, partition_keys=("day",))
    with pytest.raises(ValidationError, match=r"PARTITIONED BY names unknown column\(s\) \['day'\]"):
        create_table_source(ctx)


def test_copy_is_independent():
    source = create_table_source(fs_ctx())
    clone = source.copy()
    clone.apply_limit(3)
    assert source.limit is None and clone.limit == 3
