"""The pickle scan the restore test runs over every case's state (``pickles.py``), and its list of the node
versions that may keep pickles: only versions written before the state codec, never one compilation writes."""

from __future__ import annotations

import base64
import pickle

from planengine.exec import base as B
from planengine.runtime.operators.state_codec import STATE_FORMAT, dump_state, encode
from tests.restore_corpus.pickles import PICKLING_VERSIONS, allowed_pickles, pickles_in


def test_pickled_blobs_and_base64_pickles_inside_json_state_are_found():
    blob = pickle.dumps({"last": 1, "rows": []}, protocol=4)  # window_state.PickledValue
    assert list(pickles_in({"key": {"_all": 0}, "value": {"blob": bytearray(blob)}})) == ["value.value.blob"]
    udaf = base64.b64encode(pickle.dumps([1, 2])).decode("ascii")  # group aggregate versions 1-3, Python UDAF
    state = {"value": {"acc": encode({"n": 1, "a": [3, udaf], "out": None, "g": ["k"]}), "ts": 0}}
    assert list(pickles_in(state)) == ["value.value.acc[json].a[1] (base64)"]


def test_state_codec_values_and_the_json_text_states_are_clean():
    value = {"value": {"format": STATE_FORMAT, "json": dump_state({"rows": [(1, ("gAS", b"\x80\x04"))]})}}
    assert list(pickles_in(value)) == []
    assert list(pickles_in({"value": {"acc": encode({"n": 1, "a": [dump_state({"s": {1}})]}), "ts": 5}})) == []
    (finding,) = pickles_in({"value": {"format": 1, "json": "{not json"}})
    assert finding.startswith("value.value.json (not state codec text")


def test_only_registered_versions_older_than_the_newest_may_keep_pickles():
    import planengine.exec.nodes  # noqa: F401  (registers the built-in nodes)

    registered = B.registered()
    assert set(PICKLING_VERSIONS) <= set(registered), "stale entries: versions that are not registered"
    newest = {name: max(v for n, v in registered if n == name) for name, _ in registered}
    written = {(name, newest[name]) for name, _ in PICKLING_VERSIONS} & set(PICKLING_VERSIONS)
    # the last ones were the Python session operator (a Python aggregate function; tagged JSON from
    # window-aggregate_4 / group-window-aggregate_4 on) and OVER's Python fallback (from over-aggregate_4 on)
    assert written == set(), f"compilation writes pickling versions: {written}"


def test_a_pickle_is_allowed_only_where_a_pickling_version_of_the_query_keeps_it():
    plan = {"nodes": [{"id": 1, "type": "stream-exec-table-source-scan_1"},
                      {"id": 2, "type": "stream-exec-temporal-sort_1"}, {"id": 3, "type": "stream-exec-sink_1"},
                      {"id": 4, "type": "stream-exec-table-source-scan_1"},
                      {"id": 5, "type": "stream-exec-temporal-sort_2"}, {"id": 6, "type": "stream-exec-sink_2"}],
            "edges": [{"source": 1, "target": 2}, {"source": 2, "target": 3}, {"source": 4, "target": 5},
                      {"source": 5, "target": 6}]}
    assert allowed_pickles(plan, "3_stream-exec-sink-1_sink") == {"bufferedRows"}
    assert allowed_pickles(plan, "6_stream-exec-sink-2_sink") == set()
