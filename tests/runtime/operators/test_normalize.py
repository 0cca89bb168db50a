"""Changelog normalize: upsert input → full changelog with before-images (Flink's expectations).

One case table for both strategies: ``changelog-normalize_1`` on the Python TWS operator and ``_2`` on the JVM
processor (``runtime/jvm/changelog_processors.py``); the JVM's typed state and TTL are in ``test_changelog_jvm.py``.
"""

from __future__ import annotations

import pytest

from planengine.exec import nodes as X
from planengine.ir.changelog import ALL
from planengine.ir.types import parse_type
from planengine.runtime.jvm.changelog_processors import jvm_changelog_normalize
from planengine.runtime.operators.changelog_normalize import changelog_normalize as python_changelog_normalize
from tests.runtime.operators.test_aggregate import batches, flink, input_node, node_ctx


@pytest.fixture(params=["python", "jvm"])
def changelog_normalize(request):
    """The translation under test: version 1 (Python operator) or version 2 (JVM processor)."""
    return python_changelog_normalize if request.param == "python" else jvm_changelog_normalize

ROW = "ROW<a STRING, b INT, c STRING>"


def _node(ub: bool = True) -> X.ChangelogNormalize:
    return X.ChangelogNormalize(inputs=(input_node(ROW),), output_type=parse_type(ROW), changelog_mode=ALL,
                                unique_keys=(0,), generate_update_before=ub)


def test_upsert_and_key_only_deletes(spark, feed, runner, tmp_path, changelog_normalize):
    """kafka-with-non-key-filter's input: identical +U dropped, key-only -D emits the stored row, unknown -D
    dropped; state survives a restart and is readable as ``latestRow``."""
    f = feed("a STRING, b INT, c STRING, _rowkind STRING", changelog=True)
    node = _node()
    df = changelog_normalize(f.stream(), node, node_ctx(spark, node)).df
    got = batches(runner, f, df, [[
        ("one", 1, "a", "+I"), ("one", 2, "bb", "+U"), ("three", 3, "ccc", "+U"), ("three", 3, "ccc", "+U"),
        ("two", 0, "dd", "+U"), ("two", 1, "dd", "+U"), ("one", 4, "aaaa", "+I"), ("one", 4, "aaaa", "+U"),
        ("three", None, None, "-D"), ("nobody", None, None, "-D")]])
    assert sorted(flink(got[0])) == sorted([
        "+I[one, 1, a]", "-U[one, 1, a]", "+U[one, 2, bb]", "-U[one, 2, bb]", "+U[one, 4, aaaa]",
        "+I[three, 3, ccc]", "-D[three, 3, ccc]", "+I[two, 0, dd]", "-U[two, 0, dd]", "+U[two, 1, dd]"])
    # order per key is Flink's
    assert [x for x in flink(got[0]) if "one" in x] == [
        "+I[one, 1, a]", "-U[one, 1, a]", "+U[one, 2, bb]", "-U[one, 2, bb]", "+U[one, 4, aaaa]"]
    state = spark.read.format("statestore").option("stateVarName", "latestRow").load(str(tmp_path / "ck"))
    assert state.count() == 2  # one, two


def test_retract_source_with_duplicates_and_restore(spark, feed, runner, changelog_normalize):
    """changelog-normalize-source: -U dropped (the +U brings the before-image from state); after a restart
    the stored rows still drive -U/+U and -D."""
    f = feed("a STRING, b INT, c STRING, _rowkind STRING", changelog=True)
    node = _node()
    ctx = node_ctx(spark, node)
    r = runner(changelog_normalize(f.stream(), node, ctx).df)
    f.put([("one", 1, "a", "+I"), ("two", 2, "b", "+I"), ("one", 1, "a", "-U"), ("one", 1, "aa", "+U"),
           ("three", 3, "c", "+I"), ("two", 2, "b", "-D"), ("three", 3, "c", "-U"), ("three", 3, "cc", "+U")])
    before = flink(r.take())
    r.stop()
    assert sorted(before) == sorted(["+I[one, 1, a]", "+I[two, 2, b]", "-U[one, 1, a]", "+U[one, 1, aa]",
                                     "+I[three, 3, c]", "-D[two, 2, b]", "-U[three, 3, c]", "+U[three, 3, cc]"])
    r2 = runner(changelog_normalize(f.stream(), node, ctx).df)
    f.put([("one", 1, "aa", "-U"), ("one", 1, "x", "+U"), ("three", None, None, "-D")])
    assert flink(r2.take()) == ["-U[one, 1, aa]", "+U[one, 1, x]", "-D[three, 3, cc]"] or sorted(
        flink(r2.take())) == sorted(["-U[one, 1, aa]", "+U[one, 1, x]", "-D[three, 3, cc]"])
