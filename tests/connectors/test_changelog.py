import pytest

from planengine.errors import ValidationError
from planengine.ir.changelog import ALL, INSERT_ONLY, UPSERT, ChangelogMode, RowKind


@pytest.mark.parametrize(("text", "expected"), [
    ("I", INSERT_ONLY), ("I,UA,D", UPSERT), ("I,UB,UA,D", ALL), ("d,ub,ua,i", ALL), (" I , UA , D ", UPSERT),
])
def test_parse_reads_letters_in_any_order_and_case(text, expected):
    assert ChangelogMode.parse(text) == expected


def test_str_is_canonical_and_round_trips():
    assert [str(m) for m in (INSERT_ONLY, UPSERT, ALL)] == ["I", "I,UA,D", "I,UB,UA,D"]
    for mode in (INSERT_ONLY, UPSERT, ALL, ChangelogMode.of(RowKind.INSERT, RowKind.DELETE)):
        assert ChangelogMode.parse(str(mode)) == mode


def test_key_only_deletes_render_as_pd_and_round_trip():
    mode = ChangelogMode(UPSERT.kinds, key_only_deletes=True)
    assert str(mode) == "I,UA,PD"
    assert ChangelogMode.parse("I,UA,PD") == mode
    assert mode.includes(UPSERT) and mode != UPSERT


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty changelog mode"),
    ("I,X", "unknown changelog letter 'X'"),
    ("I,UB", "UB without UA"),
    ("I,I", "repeats a row kind"),
    ("I,D,PD", "both D and PD"),
])
def test_parse_rejects_impossible_modes(text, message):
    with pytest.raises(ValidationError, match=message):
        ChangelogMode.parse(text)


def test_questions_the_planner_asks():
    assert INSERT_ONLY.contains_only_inserts() and not UPSERT.contains_only_inserts()
    assert UPSERT.is_upsert() and not ALL.is_upsert() and not INSERT_ONLY.is_upsert()
    assert ALL.is_retract() and not UPSERT.is_retract()
    assert ALL.includes(UPSERT) and not UPSERT.includes(ALL)
    assert UPSERT.contains_deletes() and UPSERT.contains_updates()
    assert INSERT_ONLY.union(UPSERT) == UPSERT


def test_row_kind_short_strings_match_the_runtime_rowkind_column():
    assert [k.short_string for k in RowKind] == ["+I", "-U", "+U", "-D"]
    assert [RowKind.from_short_string(s) for s in ("+I", "-U", "+U", "-D")] == list(RowKind)
    assert RowKind.UPDATE_BEFORE.is_retraction and not RowKind.UPDATE_AFTER.is_retraction
    with pytest.raises(ValidationError, match="unknown row kind"):
        RowKind.from_short_string("I")
