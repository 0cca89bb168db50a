"""The state layout of one Spark checkpoint, read from the files Spark wrote (no SparkSession needed).

A *layout* is what a restore depends on: per stateful operator id, the operator's name, its state stores
(a stream-stream join has four, a ``transformWithState`` operator one with several column families), each
store's partition count, and per column family the key and value schemas Spark stored. It is plain JSON,
so a snapshot's manifest can record it and ``planengine check`` can compare two of them.

Why read the files rather than Spark's ``state-metadata`` source: the same function must serve the snapshot
writer (which runs while the driver stops, where a Spark job per query would cost seconds) and the check (the
stored side needs no Spark at all), and ``state-metadata`` does not expose key/value schemas anyway. The
formats, as Spark 4.2 and 4.3 write them (``tests/runtime/test_state_check.py`` checks the operators against
``state-metadata``):

* ``state/<op>/_metadata/metadata``: ``v1`` + newline + JSON (``operatorInfo``, ``stateStoreInfo``) for
  native operators (aggregation, dedup, stream-stream join);
* ``state/<op>/_metadata/v2/<batch>``: ``v2`` + newline + JSON, adding ``stateSchemaFilePaths`` and
  ``operatorPropertiesJson`` (state variables, time mode) for ``transformWithState``; the newest batch wins;
* ``state/<op>/<partition>/[<store>/]_metadata/schema``: Java ``DataOutputStream``: ``writeUTF("v2")``, then
  key and value schema JSON each as an int chunk count and ``writeUTF`` chunks (native operators; only
  partition 0 carries it);
* ``state/<op>/_stateSchema/<store>/<batch>_<uuid>``: ``writeUTF("v3")``, an int column family count, then
  per column family its name, a short schema id, key schema (chunked), a short schema id, value schema
  (chunked), the key encoder spec (chunked) and the user key encoder schema (chunked). The metadata names
  the file in force (by an absolute path of the run that wrote it, so only its file name is used).
"""

from __future__ import annotations

import contextlib
import json
import re
import struct
from pathlib import Path
from typing import Any

LAYOUT_VERSION = 1
_V2_METADATA_BATCH = re.compile(r"^\d+$")


class LayoutError(ValueError):
    """A state file this engine cannot parse; the message names the file."""


# --- binary readers (java.io.DataInputStream) -------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes, path: Path):
        self.data, self.pos, self.path = data, 0, path

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise LayoutError(f"{self.path}: truncated at byte {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def short(self) -> int:
        return int(struct.unpack(">H", self._take(2))[0])

    def int(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def utf(self) -> str:
        # Java's modified UTF-8 equals UTF-8 for everything a schema holds except NUL and supplementary chars.
        return self._take(self.short()).decode("utf-8", errors="replace")

    def chunked(self) -> str:
        count = self.int()
        if not 0 < count < 1 << 16:
            raise LayoutError(f"{self.path}: bad chunk count {count} at byte {self.pos - 4}")
        return "".join(self.utf() for _ in range(count))

    def json(self) -> Any:
        text = self.chunked()
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise LayoutError(f"{self.path}: schema JSON unreadable ({e})") from None


def read_schema_file(path: Path) -> dict[str, dict[str, Any]]:
    """Column family -> ``{"key": struct JSON, "value": struct JSON}`` of one state schema file."""
    r = _Reader(path.read_bytes(), path)
    version = r.utf()
    if version == "v1":
        return {"default": {"key": _loads(r.utf(), path), "value": _loads(r.utf(), path)}}
    if version == "v2":
        return {"default": {"key": r.json(), "value": r.json()}}
    if version == "v3":
        families: dict[str, dict[str, Any]] = {}
        for _ in range(r.int()):
            name = r.utf()
            r.short()  # key schema id (schema evolution bookkeeping; the schema itself is compared)
            key = r.json()
            r.short()
            value = r.json()
            r.chunked()  # key state encoder spec (follows from the key schema and the state variable type)
            r.chunked()  # user key encoder schema (part of the key schema already)
            families[name] = {"key": key, "value": value}
        return families
    raise LayoutError(f"{path}: state schema format {version!r} is not known to this engine")


def _loads(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise LayoutError(f"{path}: schema JSON unreadable ({e})") from None


# --- operator metadata ----------------------------------------------------------------------------------------
def _operator_metadata(op_dir: Path) -> tuple[int, dict[str, Any]] | None:
    v2 = op_dir / "_metadata" / "v2"
    if v2.is_dir():
        batches = sorted((int(p.name) for p in v2.iterdir() if _V2_METADATA_BATCH.match(p.name)), reverse=True)
        if batches:
            return 2, _text_metadata(v2 / str(batches[0]))
    v1 = op_dir / "_metadata" / "metadata"
    if v1.is_file():
        return 1, _text_metadata(v1)
    return None


def _text_metadata(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    _version, _, body = text.partition("\n")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise LayoutError(f"{path}: operator metadata unreadable ({e})") from None
    if not isinstance(data, dict):
        raise LayoutError(f"{path}: operator metadata is not a JSON object")
    return data


def _partitions(op_dir: Path) -> list[int]:
    return sorted(int(p.name) for p in op_dir.iterdir() if p.is_dir() and p.name.isdigit())


def _store_schemas(op_dir: Path, store: dict[str, Any], first_partition: int | None) -> dict[str, Any] | None:
    name = str(store.get("storeName") or "default")
    paths = store.get("stateSchemaFilePaths") or []
    if paths:  # transformWithState: the newest schema file listed in the metadata is in force
        candidate = op_dir / "_stateSchema" / name / Path(str(paths[-1])).name
        if candidate.is_file():
            return read_schema_file(candidate)
        raise LayoutError(f"{candidate}: state schema file named by the operator metadata is missing")
    if first_partition is None:
        return None
    base = op_dir / str(first_partition)
    path = (base if name == "default" else base / name) / "_metadata" / "schema"
    return read_schema_file(path) if path.is_file() else None


def read_layout(checkpoint_dir: str | Path) -> dict[str, Any]:
    """The state layout of a query checkpoint: ``{"version": 1, "operators": {"<op id>": …}}``.

    A checkpoint without ``state/`` (a stateless query, or one that never committed) has no operators.
    Raises ``LayoutError`` for a file it cannot parse, naming the file.
    """
    operators: dict[str, Any] = {}
    state = Path(checkpoint_dir) / "state"
    if state.is_dir():
        for op_dir in sorted((p for p in state.iterdir() if p.is_dir() and p.name.isdigit()),
                             key=lambda p: int(p.name)):
            operators[op_dir.name] = _operator(op_dir)
    return {"version": LAYOUT_VERSION, "operators": operators}


def _operator(op_dir: Path) -> dict[str, Any]:
    partitions = _partitions(op_dir)
    first = partitions[0] if partitions else None
    found = _operator_metadata(op_dir)
    if found is None:
        # Spark before operator metadata (3.x) or an interrupted first batch: only the default store's schema.
        schemas = _store_schemas(op_dir, {"storeName": "default"}, first)
        return {"name": None, "metadataVersion": None, "properties": None,
                "stores": {"default": {"partitions": len(partitions), "schemas": schemas}}}
    version, meta = found
    info = meta.get("operatorInfo") or {}
    stores: dict[str, Any] = {}
    for store in meta.get("stateStoreInfo") or []:
        name = str(store.get("storeName") or "default")
        stores[name] = {"partitions": int(store.get("numPartitions", len(partitions))),
                        "schemas": _store_schemas(op_dir, store, first)}
    properties = meta.get("operatorPropertiesJson")
    if isinstance(properties, str) and properties:
        with contextlib.suppress(json.JSONDecodeError):
            properties = json.loads(properties)
    return {"name": info.get("operatorName"), "metadataVersion": version, "properties": properties or None,
            "stores": stores}
