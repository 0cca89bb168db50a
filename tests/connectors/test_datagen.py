import re

import pytest

from planengine.connectors.base import ScanContext
from planengine.connectors.datagen import FieldGenerator
from planengine.connectors.discovery import create_table_source
from planengine.errors import OptionError
from planengine.ir import types as T
from planengine.ir.changelog import INSERT_ONLY
from tests.connectors.builders import build_ctx

COLUMNS = [("id", "BIGINT"), ("name", "STRING"), ("price", "DOUBLE"), ("ts", "TIMESTAMP(3)")]


def datagen(**options):
    return create_table_source(build_ctx(COLUMNS, {"connector": "datagen", **options}))


def test_defaults_insert_only_unbounded():
    source = datagen()
    assert source.changelog_mode() == INSERT_ONLY
    assert source.rows_per_second == 10000
    assert source.scan_runtime_provider(ScanContext()).is_bounded is False
    assert [g.kind for g in source.generators()] == ["random"] * 4


def test_number_of_rows_or_a_sequence_makes_it_bounded():
    assert datagen(**{"number-of-rows": "5"}).scan_runtime_provider(ScanContext()).is_bounded
    seq = datagen(**{"fields.id.kind": "sequence", "fields.id.start": "1", "fields.id.end": "10"})
    assert seq.scan_runtime_provider(ScanContext()).is_bounded
    assert seq.generators()[0] == FieldGenerator("id", T.BIGINT, "sequence", start=1, end=10, null_rate=0.0)


def test_field_options_are_typed_per_column():
    source = datagen(**{"fields.id.min": "1", "fields.id.max": "9", "fields.price.max": "2.5",
                        "fields.name.length": "8", "fields.ts.max-past": "1 h", "fields.name.null-rate": "0.25"})
    by_name = {g.column: g for g in source.generators()}
    assert (by_name["id"].min, by_name["id"].max) == (1, 9)
    assert by_name["price"].max == 2.5
    assert by_name["name"].length == 8 and by_name["name"].null_rate == 0.25
    assert by_name["ts"].max_past_ms == 3_600_000


def test_unknown_column_gets_a_did_you_mean_on_the_column_name():
    with pytest.raises(OptionError) as info:
        datagen(**{"fields.nmae.length": "3", "fields.name.lenght": "3", "fields.name.min": "1",
                   "rows-per-second": "0"})
    text = str(info.value)
    assert ("unknown option 'fields.nmae.length': did you mean column 'name'? the table has no column 'nmae' "
            "(columns: id, name, price, ts)") in text
    assert "unknown option 'fields.name.lenght': did you mean 'fields.name.length'?" in text
    assert "unknown option 'fields.name.min': 'min' does not apply to column 'name' of type STRING" in text
    assert "option 'rows-per-second' = '0' is not valid: expected a positive integer" in text


def test_sequence_rules():
    with pytest.raises(OptionError, match=re.escape("needs both 'fields.id.start' and 'fields.id.end'")):
        datagen(**{"fields.id.kind": "sequence", "fields.id.start": "1"})
    with pytest.raises(OptionError, match=r"'fields.id.start' \(9\) is greater than 'fields.id.end' \(1\)"):
        datagen(**{"fields.id.kind": "sequence", "fields.id.start": "9", "fields.id.end": "1"})
    with pytest.raises(OptionError, match=re.escape("'fields.id.end' only applies to sequences")):
        datagen(**{"fields.id.end": "1"})
    with pytest.raises(OptionError, match=re.escape("between 0.0 and 1.0")):
        datagen(**{"fields.name.null-rate": "1.5"})


def test_computed_and_metadata_columns_are_not_generated():
    ctx = build_ctx(COLUMNS, {"connector": "datagen", "fields.m.kind": "random"}, metadata=(("m", "STRING", None),))
    with pytest.raises(OptionError, match="column 'm' is a metadata column; datagen generates physical columns"):
        create_table_source(ctx)


def test_projection_selects_generators():
    source = datagen()
    source.apply_projection([[3], [0]], T.row(("ts", T.timestamp(3)), ("id", T.BIGINT)))
    assert [g.column for g in source.generators()] == ["ts", "id"]
    assert source.as_summary_string() == "datagen(rows-per-second=10000, project=[ts, id])"
