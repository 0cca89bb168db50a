"""Finding pickles in operator state (issue 9, item 5).

A pickle ties a snapshot to the Python and class internals of the engine that wrote it, so every node version
whose Python operator keeps Python values in state uses the versioned state codec (``state_codec.dump_state``) since
it was introduced. Only the versions written before it, listed in ``PICKLING_VERSIONS`` with the state
variables that hold pickles, may have them: their plans' snapshots hold pickles and keep them.

``scan_checkpoints`` reads every state variable of the Python ``transformWithState`` operators of a run's
checkpoints through Spark's state data source and reports each value holding a pickle that no such node
version of the query accounts for: a pickled blob, a base64 pickle inside a string (a Python aggregate
function's accumulator in a group aggregate's JSON state), also inside JSON text, and a codec value whose
text does not decode.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from planengine.plan.topology import Dag, Topology, legacy_topology
from planengine.runtime.operators.state_codec import load_state
from planengine.runtime.storage.checkpoint_layout import read_layout

_GROUP_AGGREGATE_UDAF = ("accumulators",)  # a Python aggregate function's accumulator, base64-pickled
_SESSIONS = ("windowAccumulators",)  # session windows on transformWithState (window_session.py)
PICKLING_VERSIONS: dict[tuple[str, int], tuple[str, ...]] = {
    ("stream-exec-temporal-sort", 1): ("bufferedRows",),
    ("stream-exec-window-join", 2): ("leftWindowRows", "rightWindowRows"),
    ("stream-exec-temporal-join", 1): ("leftPending", "rightVersions"),
    # CURRENT_WATERMARK's replay of the assigner, in a Calc right below it (window_watermark.py)
    ("stream-exec-watermark-assigner", 2): ("emittedWatermark",),
    ("stream-exec-group-aggregate", 1): _GROUP_AGGREGATE_UDAF,
    ("stream-exec-group-aggregate", 2): _GROUP_AGGREGATE_UDAF,
    ("stream-exec-group-aggregate", 3): _GROUP_AGGREGATE_UDAF,
    ("stream-exec-over-aggregate", 1): ("pendingRows", "accumulators"),
    # versions 2 and 3 fall back to version 1's operator for LAG and Python aggregate functions (runtime/jvm/
    # over_aggregate.refusal); version 4 runs LAG on the JVM and keeps the fallback's state as tagged JSON
    ("stream-exec-over-aggregate", 2): ("pendingRows", "accumulators"),
    ("stream-exec-over-aggregate", 3): ("pendingRows", "accumulators"),
    ("stream-exec-window-aggregate", 1): _SESSIONS,
    ("stream-exec-window-aggregate", 2): _SESSIONS,
    ("stream-exec-group-window-aggregate", 1): _SESSIONS,
    ("stream-exec-group-window-aggregate", 2): _SESSIONS,
    # version 3 runs sessions on the JVM, except with a Python aggregate function (window_session.py, pickled);
    # version 4 keeps those sessions with the state codec
    ("stream-exec-window-aggregate", 3): _SESSIONS,
    ("stream-exec-group-window-aggregate", 3): _SESSIONS,
}
_PICKLE_PROTOCOLS = frozenset(b"\x02\x03\x04\x05")
_PYTHON_OPERATORS = ("transformWithStateInPandasExec", "transformWithStateInPySparkExec")


def is_pickle(data: bytes) -> bool:
    """``data`` starts like a pickle of protocol 2 to 5 (PROTO opcode, protocol number).

    >>> import pickle
    >>> is_pickle(pickle.dumps({"a": 1})), is_pickle(b'{"a":1}')
    (True, False)
    """
    return len(data) > 2 and data[0] == 0x80 and data[1] in _PICKLE_PROTOCOLS


def pickles_in(value: Any, where: str = "value") -> Iterator[str]:
    """Where inside ``value`` (a state row as Python data) pickles sit, or codec text does not decode.

    >>> import pickle
    >>> list(pickles_in({"acc": json.dumps({"a": [base64.b64encode(pickle.dumps([1])).decode()]})}))
    ['value.acc[json].a[0] (base64)']
    >>> list(pickles_in({"format": 1, "json": '{"$t":[1,2]}'}))
    []
    """
    if isinstance(value, bytes | bytearray):
        if is_pickle(bytes(value)):
            yield where
    elif isinstance(value, str):
        yield from _pickles_in_text(value, where)
    elif isinstance(value, Mapping):
        if set(value) == {"format", "json"} and isinstance(value["json"], str):  # a JsonValue variable
            try:
                load_state(value["json"])
            except (ValueError, TypeError, KeyError) as error:
                yield f"{where}.json (not state codec text: {error})"
        for k, v in value.items():
            yield from pickles_in(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from pickles_in(v, f"{where}[{i}]")


def _pickles_in_text(text: str, where: str) -> Iterator[str]:
    if text[:2] == "gA" and len(text) >= 8:  # base64 of b"\x80" + protocol
        try:
            if is_pickle(base64.b64decode(text, validate=True)):
                yield f"{where} (base64)"
                return
        except (binascii.Error, ValueError):
            pass
    if text[:1] in ("{", "["):
        try:
            decoded = json.loads(text)
        except ValueError:
            return
        yield from pickles_in(decoded, f"{where}[json]")


def allowed_pickles(plan: dict[str, Any], query_uid: str) -> set[str]:
    """State variables of ``query_uid`` that a node version of its streaming part may keep pickled (of the
    whole plan for a query the topology does not name: the runtime's internal changelog-channel queries)."""
    dag = Dag.from_plan(plan)
    topology = Topology.from_plan(plan) or legacy_topology(dag)
    types = {int(n["id"]): str(n["type"]) for n in plan["nodes"]}
    queries = [q for q in topology.queries if q.uid == query_uid]
    nodes = [n for q in queries for n in topology.streaming_nodes(dag, q)] if queries else list(types)
    allowed: set[str] = set()
    for node in nodes:
        name, _, version = types[node].rpartition("_")
        allowed.update(PICKLING_VERSIONS.get((name, int(version)), ()))
    return allowed


def scan_checkpoints(spark: Any, plan: dict[str, Any], checkpoints: Path,
                     batch_ids: Mapping[str, int] | None = None) -> tuple[list[str], int]:
    """(findings, values read) over every Python transformWithState operator's state variables in
    ``checkpoints/<query uid>/``, at the newest batch or, per query, at ``batch_ids[uid]``. Variables a node
    version of the query may keep pickled are not read."""
    findings: list[str] = []
    read = 0
    for checkpoint in sorted(p for p in checkpoints.iterdir() if (p / "state").is_dir()):
        uid = checkpoint.name
        allowed = allowed_pickles(plan, uid)
        for op, meta in sorted(read_layout(checkpoint)["operators"].items(), key=lambda kv: int(kv[0])):
            if meta.get("name") not in _PYTHON_OPERATORS:
                continue
            for variable in (meta.get("properties") or {}).get("stateVariables", []):
                name = variable["stateName"]
                if name.startswith("$") or name in allowed:
                    continue
                reader = spark.read.format("statestore").option("operatorId", int(op)).option("stateVarName", name)
                if batch_ids is not None and uid in batch_ids:
                    reader = reader.option("batchId", batch_ids[uid])
                for row in reader.load(str(checkpoint)).collect():
                    read += 1
                    data = {k: v for k, v in row.asDict(recursive=True).items() if k != "partition_id"}
                    findings += [f"query {uid}, operator {op}, state {name}: {w}" for w in pickles_in(data)]
    return findings, read
